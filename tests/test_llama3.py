"""The Llama-3 family as the embedded default builds it: Llama-3's tokenizer rebuilt from the ranks
llama-models ships, id-exact against tiktoken on the same ranks; Llama-3.1's real chat template
from trl's wheel; a toy-shaped reward model that scores as PyTorch does through ONNX Runtime and
through the native engine, whose tokens match transformers' and tiktoken's."""

import re

import numpy as np
import pytest
from conftest import ADVERSARIAL, TINY, sample_set_pairs, tiny_reward_model
from rmbench.models.build import build_tokenizer, chat_messages, chat_template, chat_texts, load_tokenizer
from rmbench.models.byte_bpe import LLAMA3_SPLIT, VOCABULARIES, read_ranks, tiktoken_encoding
from rmbench.models.families import family
from test_byte_bpe import UNICODE

LLAMA3 = VOCABULARIES["llama3"]
# Where Llama-3 differs from Qwen2: digit runs of up to three, no NFC (decomposed marks stay),
# its header and turn tokens inline.
TEXTS = [
    *UNICODE,
    "1 12 123 1234 12345 123456 1234567, 3.14159265, 2026-12-06, 1,000,000 and ١٢٣٤٥",
    "e\u0301 stays decomposed, A\u030a too: Llama-3 does not normalize",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|eom_id|><|python_tag|>",
    "<|reserved_special_token_247|><|finetune_right_pad_id|><|start_header_id|",
    "crlf\r\n\r\nline\rcr \t\t tabs\u2028sep",
    *(p + r for p, r in ADVERSARIAL),
]


@pytest.fixture(scope="module")
def llama3(tmp_path_factory):
    """The tokenizer folder the pipeline builds for the family, and tiktoken on the same ranks."""
    folder = tmp_path_factory.mktemp("llama3-tokenizer")
    build_tokenizer({"name": "l", "architecture": "llama-3.1-8b", "source": "synthetic"}, folder)
    return load_tokenizer(folder), tiktoken_encoding(LLAMA3)


def hf_ids(tokenizer, text):
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def test_the_ranks_and_the_split_pattern_are_llama_models_own():
    ranks = read_ranks(LLAMA3.ranks_file())
    assert len(ranks) == 128000 and sorted(ranks.values()) == list(range(128000))
    source = (LLAMA3.ranks_file().parent / "tokenizer.py").read_text()
    assert re.search(r'pat_str = r"(.*)"', source).group(1) == LLAMA3_SPLIT


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_llama3_is_id_exact_with_tiktoken(llama3, text):
    tokenizer, encoding = llama3
    assert hf_ids(tokenizer, text) == encoding.encode(text, allowed_special="all")


def test_known_ids_of_the_real_llama3_tokenizer(llama3):
    tokenizer, _ = llama3
    assert hf_ids(tokenizer, "Hello world") == [9906, 1917]
    assert tokenizer("Hello world")["input_ids"] == [128000, 9906, 1917]  # BOS first, as Llama-3's
    named = {"<|begin_of_text|>": 128000, "<|finetune_right_pad_id|>": 128004, "<|eot_id|>": 128009}
    assert {t: tokenizer.convert_tokens_to_ids(t) for t in named} == named
    assert tokenizer.convert_tokens_to_ids("<|reserved_special_token_247|>") == 128255
    assert (tokenizer.pad_token_id, tokenizer.eos_token_id, len(tokenizer)) == (128004, 128009, 128256)


def test_rows_render_through_llama31s_real_template(llama3):
    """A system header with the knowledge cutoff and a date on every row, each turn's text trimmed,
    one BOS: the rendered text is tokenized without special tokens added."""
    tokenizer, encoding = llama3
    prompt = "\n\nHuman: Hi there  \n\nAssistant: Hello!\n\nHuman: And <|eot_id|> as text?\n\nAssistant:"
    for reply in (" Sure. ", "", "<think>no</think> reasoning"):
        (text,) = chat_texts(tokenizer, [(prompt, reply)])
        header = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
        assert text.startswith(header + "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n")
        turns = [
            f"<|start_header_id|>{m['role']}<|end_header_id|>\n\n{m['content'].strip()}<|eot_id|>"
            for m in chat_messages(prompt, reply)
        ]
        assert text.endswith("".join(turns))
        ids = hf_ids(tokenizer, text)
        assert ids == encoding.encode(text, allowed_special="all") and ids.count(128000) == 1
        assert ids[-1] == 128009  # the reply's end: what the last-token head reads
    assert "<|eot_id|> as text?<|eot_id|>" in text  # the special token's text is its token in the input


@pytest.fixture(scope="module")
def toy_llama3(tmp_path_factory):
    """A toy-shaped Llama-3 reward model folder (the real tokenizer and template), exported, with rows."""
    cfg = TINY | {
        "name": "tiny_llama3",
        "architecture": "llama-3.1-8b",
        "layers": 2,
        "num_attention_heads": 4,
    }
    return tiny_reward_model(tmp_path_factory.mktemp("tiny-llama3"), cfg, "l")


def test_a_toy_llama3_reward_model_scores_alike_in_pytorch_and_onnx_runtime(toy_llama3):
    from rmbench.models.build import encode, load_model
    from rmbench.runtimes.ort_python import OrtPythonRuntime

    built = toy_llama3
    model = load_model(built["model"])
    assert type(model).__name__ == family("llama-3.1-8b")["class"]
    assert model.config.rope_scaling["rope_type"] == "llama3" and model.config.num_key_value_heads == 1
    tokenizer = load_tokenizer(built["model"])
    pairs = [(r["prompt"], r["response"]) for r in built["rows"]]
    import torch

    with torch.no_grad():
        reference = model(**encode(tokenizer, pairs, "pt", padding_side="left")).logits[:, 0].numpy()
    runtime = OrtPythonRuntime(built["model"], built["onnx"], "cpu", 1, 512, {})
    runtime.load()
    try:
        assert np.allclose(runtime.score(pairs), reference, atol=1e-4)
    finally:
        runtime.close()
    assert chat_template(built["model"]).count("Cutting Knowledge Date") == 1  # the model folder keeps it


# Rows of several turns, an empty reply, a reply holding <think> and Llama-3's turn tokens as text.
TEMPLATE_ROWS = [
    ("\n\nHuman: Hi there  \n\nAssistant: Hello!\n\nHuman: And <|eot_id|> as text?\n\nAssistant:", " Sure. "),
    ("\n\nHuman: q\n\nAssistant:", ""),
    ("\n\nHuman: think first\n\nAssistant:", "<think>no</think> reasoning <|start_header_id|>x"),
    ("\n\nHuman: a\n\nAssistant: b\n\nAssistant: c\n\nHuman: d\n\nAssistant:", "e\r\n\r\n"),
]


def test_native_rows_are_id_exact_with_transformers_and_tiktoken(binary, toy_llama3):
    """The engine's rows: Llama-3.1's template by its chat form, Llama-3's split (digit runs of
    three, no NFC), whole pieces kept; against apply_chat_template + the tokenizer and tiktoken.
    Uncut: a chat row keeps its model's context (tests/test_native_bpe.py cuts it)."""
    from test_native_bpe import assert_id_exact_or_refused

    pairs = TEMPLATE_ROWS + [(f"\n\nHuman: {t}\n\nAssistant:", t) for t in TEXTS] + sample_set_pairs()[:80]
    assert_id_exact_or_refused(binary, toy_llama3["model"], pairs, lambda messages: False)
    from test_native import native_tokens

    tokenizer, encoding = load_tokenizer(toy_llama3["model"]), tiktoken_encoding(LLAMA3)
    native = native_tokens(binary, toy_llama3["model"], TEMPLATE_ROWS)
    for text, got in zip(chat_texts(tokenizer, TEMPLATE_ROWS), native, strict=True):
        assert got["input_ids"] == encoding.encode(text, allowed_special="all")


def test_native_refuses_malformed_llama3_rows(binary, toy_llama3, tmp_path):
    from test_native_bpe import assert_malformed_rows_refused

    assert_malformed_rows_refused(binary, toy_llama3["model"], tmp_path)


def test_native_scores_the_toy_llama3_as_pytorch_does_alone_and_batched(binary, toy_llama3):
    from test_native_bpe import assert_scores_as_pytorch

    assert_scores_as_pytorch(binary, toy_llama3)


def test_the_service_scores_llama3_texts_as_openrlhf_and_vllm_do(toy_llama3):
    """Llama-3's tokenizer puts BOS first: /classify (vLLM) scores a text with one BOS whether verl
    stripped it or not; /get_reward scores the decoded query as it stands, a duplicate BOS dropped."""
    from fastapi.testclient import TestClient
    from rmbench.runtimes.hf_eager import HFEagerRuntime
    from rmbench.service.app import create_app
    from test_trainer_bodies import PROMPT, exact_scores

    tokenizer = load_tokenizer(toy_llama3["model"])
    text = chat_texts(tokenizer, [(PROMPT, "It is 12.")])[0]
    assert text.startswith("<|begin_of_text|><|start_header_id|>")
    runtime = HFEagerRuntime(toy_llama3["model"], None, "cpu", 1, 512, {})
    runtime.load()
    try:
        client = TestClient(create_app(runtime))
        expected = exact_scores(toy_llama3["model"], [text], special_tokens=False)[0]
        for sent in (text, text.removeprefix("<|begin_of_text|>")):
            answer = client.post("/classify", json={"input": sent, "activation": False}).json()
            assert "data" in answer, answer
            assert answer["data"][-1]["probs"][-1] == pytest.approx(expected, abs=1e-5)
        for query in (text, "<|begin_of_text|>" + text):
            answer = client.post("/get_reward", json={"query": [query]}).json()
            assert answer["rewards"][0] == pytest.approx(expected, abs=1e-5)
            assert answer["extra_logs"]["scored_as"] == ["templated"]
    finally:
        runtime.close()
