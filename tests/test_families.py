"""Model families: one declaration per family, read by every part that builds, exports, counts
or quantizes a model; a toy family added through the declaration alone; the decoder family's
FLOP model against a hand count."""

import json

import numpy as np
import pytest
import yaml
from conftest import ROOT, TINY
from rmbench.errors import ModelSourceError
from rmbench.export.onnx import export_onnx, parity_report, reference_scores
from rmbench.export.precision import matmul_nodes
from rmbench.models.build import (
    build_model,
    build_tokenizer,
    chat_messages,
    encode,
    load_tokenizer,
    token_ids,
)
from rmbench.models.families import (
    FAMILIES,
    FAMILY_KEYS,
    check_models,
    family,
    family_of_folder,
    resolved_export,
)
from rmbench.probes.flops import encoder_flops, layer_weight_shapes
from rmbench.probes.gemm import layer_shapes

# A family none of the pipeline's code names: BERT with a one-logit head on its [CLS] token.
TOY = {
    "class": "BertForSequenceClassification",
    "config": {
        "model_type": "bert",  # bert-base's published shape
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "vocab_size": 30522,
        "type_vocab_size": 2,
        "max_position_embeddings": 512,
        "hidden_act": "gelu",
        "num_labels": 1,
    },
    "head": ["bert.pooler.dense", "classifier"],
    "tokenizer": "wordpiece",
    "input": "pair",
    "pooling": "first",
    "padding_sides": ["right"],
    "ffn_matrices": 2,
    "matmul_parts": {
        "attention": ["/attention/"],
        "ffn_in": ["/intermediate/"],
        "ffn_out": ["/output/dense/"],
    },
    "ort_optimizer": "bert",
    "native_tokenizer": "wordpiece",
    "special_tokens": {"pad": "[PAD]", "bos": "[CLS]", "eos": "[SEP]"},
    "engine_export": "none",
    "vocabulary": None,
    "chat_template": None,
}


@pytest.fixture
def toy_family(monkeypatch):
    monkeypatch.setitem(FAMILIES, "toy-bert", TOY)
    return "toy-bert"


def test_a_toy_family_is_built_exported_gated_counted_and_quantized_from_its_declaration(
    toy_family, tiny_model, tmp_path
):
    cfg = TINY | {"name": "toy", "architecture": toy_family}
    build_tokenizer(cfg, tmp_path / "tokenizer")
    build_model(cfg, tmp_path / "tokenizer", tmp_path / "model")
    assert family_of_folder(tmp_path / "model")["name"] == toy_family
    assert json.loads((tmp_path / "model" / "config.json").read_text())["architectures"] == [TOY["class"]]
    export_onnx(tmp_path / "model", tmp_path / "model.onnx", opset=17)
    rows = tiny_model["rows"]
    reference = reference_scores(tmp_path / "model", rows, threads=1)
    assert np.std(reference) > 0.3  # the head was calibrated: scores spread
    report = parity_report(tmp_path / "model", tmp_path / "model.onnx", rows, reference, 1e-4, 4, 1, 0.05)
    assert report["passed"], report
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    assert encoder_flops(config, 10) > 0
    ffn = matmul_nodes(tmp_path / "model.onnx", "ffn", TOY["matmul_parts"])
    attention = matmul_nodes(tmp_path / "model.onnx", "attention", TOY["matmul_parts"])
    # attention: Q, K, V, output and its two activation products
    assert len(ffn) == 2 * cfg["layers"] and len(attention) == 6 * cfg["layers"]


def test_a_family_missing_a_key_is_refused_naming_it(monkeypatch):
    monkeypatch.setitem(
        FAMILIES, "half", {k: v for k, v in TOY.items() if k not in ("pooling", "ffn_matrices")}
    )
    with pytest.raises(ModelSourceError, match="'half' does not declare pooling, ffn_matrices"):
        family("half")
    monkeypatch.setitem(FAMILIES, "odd", TOY | {"input": "triple"})
    with pytest.raises(ModelSourceError, match="input is 'triple', not one of pair, chat"):
        family("odd")


def test_a_family_export_must_be_a_file_the_pipeline_builds_for_it(monkeypatch):
    assert resolved_export("family", family("electra-large")) == "transformers"
    assert resolved_export("relative_shift", family("electra-large")) == "relative_shift"
    monkeypatch.setitem(FAMILIES, "odd", TOY | {"engine_export": "fastest"})
    with pytest.raises(ModelSourceError, match="engine_export is 'fastest', not one of its exports"):
        family("odd")
    # no fused graph without onnxruntime.transformers' model type
    monkeypatch.setitem(FAMILIES, "unfused", TOY | {"engine_export": "transformers", "ort_optimizer": None})
    with pytest.raises(ModelSourceError, match="engine_export is 'transformers'"):
        family("unfused")


def test_a_model_deeper_than_its_family_is_refused():
    config = {"models": {"q": {"architecture": "qwen3-0.6b", "layers": 29}}}
    with pytest.raises(ModelSourceError, match="models.q.layers is 29: qwen3-0.6b has 28"):
        check_models(config)
    check_models({"models": {"q": {"architecture": "qwen3-0.6b", "layers": 28}}})


def test_a_stand_in_is_read_as_a_local_folder_from_where_its_rule_writes_it():
    stand_in = {"architecture": "llama-3.1-8b", "source": "local", "stand_in": True}
    check_models({"models": {"l": stand_in | {"local_path": "results/stand-in/l"}}})
    for wrong in ({"local_path": "mine/l"}, {"source": "synthetic", "local_path": "results/stand-in/l"}):
        with pytest.raises(ModelSourceError, match="models.l.stand_in: the pipeline writes the folder"):
            check_models({"models": {"l": stand_in | wrong}})


def test_every_declared_family_is_complete_and_the_schema_offers_exactly_them():
    for name in FAMILIES:
        assert set(family(name)) == set(FAMILY_KEYS) | {"name"}
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    enum = schema["properties"]["models"]["additionalProperties"]["properties"]["architecture"]["enum"]
    assert enum == list(FAMILIES)


def test_qwen3_flops_count_grouped_query_attention_and_swiglu_by_hand():
    """One Qwen3-0.6B layer at n = 100 tokens: Q 1024->2048, K and V 1024->1024 (8 of 16 heads),
    O 2048->1024, gate, up 1024->3072 and down 3072->1024; scores and weighted sum 2 x 2 n^2 x 2048."""
    config = family("qwen3-0.6b")["config"] | {
        "num_hidden_layers": 1,
        "architectures": ["Qwen3ForSequenceClassification"],
    }
    n = 100
    weights = 2 * n * (1024 * 2048 + 2 * 1024 * 1024 + 2048 * 1024 + 3 * 1024 * 3072)
    assert encoder_flops(config, n) == weights + 2 * 2 * n * n * 2048 == 3_227_648_000
    electra = family("electra-large")["config"] | {
        "num_hidden_layers": 1,
        "architectures": ["ElectraForSequenceClassification"],
    }
    assert encoder_flops(electra, n) == 2 * n * (4 * 1024**2 + 2 * 1024 * 4096) + 4 * n * n * 1024
    assert [name for name, _, _ in layer_weight_shapes(config)] == [
        "query", "key", "value", "attention_output", "ffn_gate", "ffn_up", "ffn_down",
    ]  # fmt: skip


def test_the_gemm_ceiling_times_the_decoders_own_shapes(tiny_decoder):
    shapes = layer_shapes(tiny_decoder["model"], 7)
    config = json.loads((tiny_decoder["model"] / "config.json").read_text())
    kv = config["head_dim"] * config["num_key_value_heads"]
    assert ("key", 7, config["hidden_size"], kv) in shapes and len(shapes) == 7


def test_qwen3_int8_groups_find_its_own_node_names(tiny_decoder):
    parts = family("qwen3-0.6b")["matmul_parts"]
    layers = tiny_decoder["cfg"]["layers"]
    assert len(matmul_nodes(tiny_decoder["onnx"], "attention", parts)) == 6 * layers
    assert len(matmul_nodes(tiny_decoder["onnx"], "ffn_in", parts)) == 2 * layers
    assert len(matmul_nodes(tiny_decoder["onnx"], "ffn_out", parts)) == layers


def test_hh_rlhf_rows_become_chat_messages():
    prompt = "\n\nHuman: What is 2+2?\n\nAssistant: 4.\n\nHuman: And 3+3?\n\nAssistant:"
    assert chat_messages(prompt, " 6. ") == [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4."},
        {"role": "user", "content": "And 3+3?"},
        {"role": "assistant", "content": " 6. "},
    ]
    # a prompt a client sends without turns is one user message
    assert chat_messages("plain", "r") == [
        {"role": "user", "content": "plain"},
        {"role": "assistant", "content": "r"},
    ]


def test_a_decoder_row_is_its_chat_template_kept_whole(tiny_decoder):
    """A chat row is cut only past its model's context (tests/test_native_bpe.py cuts one)."""
    tokenizer = load_tokenizer(tiny_decoder["model"])
    prompt = "\n\nHuman: hi\n\nAssistant:"
    ids = token_ids(tokenizer, prompt, "hello", max_length=None)
    # Qwen3's own template: an empty think block before the reply
    think = "<think>\n\n</think>\n\n"
    assert (
        tokenizer.decode(ids)
        == f"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n{think}hello<|im_end|>\n"
    )
    assert token_ids(tokenizer, prompt, "hello", max_length=5) == ids  # 5: a text pair's cut
    assert tokenizer.model_max_length == 40960  # Qwen3-0.6B's context
    batch = encode(tokenizer, [(prompt, "a"), (prompt, "a much longer reply than that")], "np")
    assert batch["attention_mask"][0][0] == 0 and batch["attention_mask"][0][-1] == 1  # left: declared
    right = encode(tokenizer, [(prompt, "a"), (prompt, "a much longer reply")], "np", padding_side="right")
    assert right["attention_mask"][0][0] == 1 and right["attention_mask"][0][-1] == 0
