"""Model families: everything rmbench knows about a kind of reward model, declared once.

A family is one entry of FAMILIES. Model building, export, parity, the FLOP model, the GEMM
ceiling, int8 groups, the native engine's command and the config checks read it; none of them names a
model. Adding a model is one entry here (docs/models.md). A key a family leaves out is an error
that names it, raised when the family is first looked up.
"""

from __future__ import annotations

import json
from pathlib import Path

from rmbench.errors import ModelSourceError
from rmbench.export.onnx_files import ONNX_OPTIMIZERS
from rmbench.models.byte_bpe import VOCABULARIES

# What each key means (docs/models.md has the long form).
FAMILY_KEYS = {
    "class": "the transformers class of the reward model (…ForSequenceClassification)",
    "config": "the real model's config.json values, model_type included",
    "head": "the reward head's layers, input to output (calibrated in a synthetic model)",
    "tokenizer": "how the embedded default builds the tokenizer: sentencepiece | wordpiece | byte_bpe",
    "vocabulary": "a byte_bpe tokenizer's ranks, split pattern and added tokens (rmbench.models.byte_bpe.VOCABULARIES), else None",
    "chat_template": (
        "a chat family's real template, which the embedded tokenizer carries: a file of the pinned "
        "trl wheel's trl/chat_templates/ (None for a pair family); a hub model keeps its own"
    ),
    "input": "how a row becomes model input: pair (tokenizer(prompt, reply)) | chat (the chat template)",
    "pooling": "which token the head reads: first | last (the last non-pad token)",
    "padding_sides": (
        "where a batch may pad, the default first: [right] for an encoder (absolute positions and a "
        "first-token head: left padding moves its scores), [left, right] for a decoder"
    ),
    "ffn_matrices": "weight matrices of a feed-forward block: 2 (up, down) or 3 (SwiGLU: gate, up, down)",
    "matmul_parts": "int8 groups by ONNX node name: attention, ffn_in, ffn_out, each a list of substrings",
    "ort_optimizer": "onnxruntime.transformers' model type for the fused graph, or None (unsupported)",
    "native_tokenizer": "the native engine's tokenizer: sentencepiece | wordpiece | byte_bpe, or None",
    "engine_export": (
        "the ONNX file the ONNX Runtime engines load under `optimizer: family`: the one that measured "
        "fastest for this family (rmbench.export.onnx_files.ONNX_OPTIMIZERS)"
    ),
    "special_tokens": "pad, bos, eos as token strings (the co-location generator's ids)",
}
TOKENIZER_KINDS = ("sentencepiece", "wordpiece", "byte_bpe")
# The `optimizer` option's value that lets each family choose its own export (engine_export)
FAMILY_EXPORT = "family"
INPUT_FORMS = ("pair", "chat")
# Tokenizer libraries the tokenizer study times that know one kind only.
LIBRARY_KINDS = {"tiktoken": "byte_bpe"}


def library_reason(name: str, declared: dict) -> str | None:
    """Why tokenizer library `name` cannot tokenize for family `declared`, or None."""
    kind = LIBRARY_KINDS.get(name)
    if kind and declared["tokenizer"] != kind:
        return f"{name} knows {kind} tokenizers only; {declared['name']}'s is {declared['tokenizer']}"
    return None


# BERT-style node names of the optimum exports (e.g. /electra/encoder/layer.0/intermediate/dense/MatMul).
BERT_MATMUL_PARTS = {
    "attention": ["/attention/"],
    "ffn_in": ["/intermediate/"],
    "ffn_out": ["/output/dense/"],
}

# What the two encoder reward models share: a text pair in, a head on the first token, BERT's
# node names, ONNX Runtime's BERT fusions.
ENCODER = {
    "input": "pair",
    "pooling": "first",
    "padding_sides": ["right"],
    "ffn_matrices": 2,
    "matmul_parts": BERT_MATMUL_PARTS,
    "ort_optimizer": "bert",
    "special_tokens": {"pad": "[PAD]", "bos": "[CLS]", "eos": "[SEP]"},
    "vocabulary": None,
    "chat_template": None,
}

# What the decoder reward models share: the dialogue in a chat template, a head on the last
# non-pad token (either padding side), SwiGLU and its node names.
DECODER = {
    "head": ["score"],
    "tokenizer": "byte_bpe",
    "input": "chat",
    "pooling": "last",
    "padding_sides": ["left", "right"],
    "ffn_matrices": 3,
    "matmul_parts": {
        "attention": ["/self_attn/"],
        "ffn_in": ["/mlp/gate_proj/", "/mlp/up_proj/"],
        "ffn_out": ["/mlp/down_proj/"],
    },
    "engine_export": "none",
}

FAMILIES: dict[str, dict] = {
    "deberta-v3-large": {
        "class": "DebertaV2ForSequenceClassification",
        "config": {
            "model_type": "deberta-v2",
            "hidden_size": 1024,
            "num_hidden_layers": 24,
            "num_attention_heads": 16,
            "intermediate_size": 4096,
            "vocab_size": 128100,
            "max_position_embeddings": 512,
            "relative_attention": True,
            "position_buckets": 256,
            "pos_att_type": ["p2c", "c2p"],
            "norm_rel_ebd": "layer_norm",
            "share_att_key": True,
            "max_relative_positions": -1,
            "position_biased_input": False,
            "type_vocab_size": 0,
            "hidden_act": "gelu",
            "layer_norm_eps": 1e-7,
            "pooler_hidden_size": 1024,
            "pooler_hidden_act": "gelu",
            "pooler_dropout": 0.0,
            "num_labels": 1,
        },
        "head": ["pooler.dense", "classifier"],
        "tokenizer": "sentencepiece",
        "native_tokenizer": "sentencepiece",
        # the position terms as the engine's operator, the rest as ORT's MultiHeadAttention
        "engine_export": "multihead_attention",
    }
    | ENCODER,
    "electra-large": {
        "class": "ElectraForSequenceClassification",
        "config": {
            "model_type": "electra",
            "hidden_size": 1024,
            "embedding_size": 1024,
            "num_hidden_layers": 24,
            "num_attention_heads": 16,
            "intermediate_size": 4096,
            "vocab_size": 30522,
            "type_vocab_size": 2,
            "max_position_embeddings": 512,
            "layer_norm_eps": 1e-12,
            "hidden_act": "gelu",
            "num_labels": 1,
        },
        "head": ["classifier.dense", "classifier.out_proj"],
        "tokenizer": "wordpiece",
        "native_tokenizer": "wordpiece",
        # onnxruntime.transformers' fused graph: fewer small operators, steadier in slow phases
        "engine_export": "transformers",
    }
    | ENCODER,
    # Skywork-Reward-V2-Qwen3-0.6B, NeMo-RL's default reward model: Qwen3-0.6B's published config
    # with one output logit read from the last non-pad token.
    "qwen3-0.6b": {
        "class": "Qwen3ForSequenceClassification",
        "config": {
            "model_type": "qwen3",
            "hidden_size": 1024,
            "num_hidden_layers": 28,
            "num_attention_heads": 16,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "intermediate_size": 3072,
            "vocab_size": 151936,
            "max_position_embeddings": 40960,
            "rope_theta": 1000000.0,
            "rms_norm_eps": 1e-6,
            "hidden_act": "silu",
            "attention_bias": False,
            "tie_word_embeddings": True,
            "pad_token_id": 151643,
            "bos_token_id": 151643,
            "eos_token_id": 151645,
            "num_labels": 1,
        },
        "vocabulary": "qwen2",
        "chat_template": "qwen3.jinja",  # an empty think block before the reply
        # ORT 1.30 has a qwen3 model type, but its fused RotaryEmbedding rejects a batch of more
        # than one row (position_ids of batch 1), so the fused graph would fail every batched
        # check: its cells are recorded as unsupported.
        "ort_optimizer": None,
        "native_tokenizer": "byte_bpe",
        "special_tokens": {"pad": "<|endoftext|>", "bos": "<|im_start|>", "eos": "<|im_end|>"},
    }
    | DECODER,
    # Skywork-Reward-V2-Llama-3.1-8B, the reward model verl's and OpenRLHF's examples serve:
    # Llama-3.1-8B's published config with one output logit read from the last non-pad token, padded
    # with Llama-3.1's fine-tuning pad token.
    "llama-3.1-8b": {
        "class": "LlamaForSequenceClassification",
        "config": {
            "model_type": "llama",
            "hidden_size": 4096,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "intermediate_size": 14336,
            "vocab_size": 128256,
            "max_position_embeddings": 131072,
            "rope_theta": 500000.0,
            "rope_scaling": {
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
            },
            "rms_norm_eps": 1e-5,
            "hidden_act": "silu",
            "attention_bias": False,
            "mlp_bias": False,
            "tie_word_embeddings": False,
            "pad_token_id": 128004,
            "bos_token_id": 128000,
            "eos_token_id": 128009,
            "num_labels": 1,
        },
        "vocabulary": "llama3",
        "chat_template": "llama3_1.jinja",  # a system header with the knowledge cutoff and a date
        "ort_optimizer": None,
        "native_tokenizer": "byte_bpe",
        "special_tokens": {
            "pad": "<|finetune_right_pad_id|>",
            "bos": "<|begin_of_text|>",
            "eos": "<|eot_id|>",
        },
    }
    | DECODER,
}


def check_family(name: str, declaration: dict) -> dict:
    """The declaration, checked: every key present, kinds known. Raises naming what is wrong."""
    missing = [key for key in FAMILY_KEYS if key not in declaration]
    if missing:
        raise ModelSourceError(
            f"model family '{name}' does not declare {', '.join(missing)} "
            f"({'; '.join(f'{k}: {FAMILY_KEYS[k]}' for k in missing)})"
        )
    checks = {
        "tokenizer": TOKENIZER_KINDS,
        "input": INPUT_FORMS,
        "pooling": ("first", "last"),
        "ffn_matrices": (2, 3),
    }
    for key, allowed in checks.items():
        if declaration[key] not in allowed:
            raise ModelSourceError(
                f"model family '{name}': {key} is {declaration[key]!r}, not one of {', '.join(map(str, allowed))}"
            )
    if (declaration["input"] == "chat") != (declaration["chat_template"] is not None):
        raise ModelSourceError(
            f"model family '{name}': a chat family names its chat_template, a pair family none"
        )
    vocabulary = declaration["vocabulary"]
    if not (vocabulary in VOCABULARIES if declaration["tokenizer"] == "byte_bpe" else vocabulary is None):
        raise ModelSourceError(
            f"model family '{name}': vocabulary is {vocabulary!r}; a byte_bpe tokenizer names one of "
            f"{', '.join(VOCABULARIES)}, any other tokenizer None"
        )
    sides = declaration["padding_sides"]
    if not sides or not set(sides) <= {"left", "right"}:
        raise ModelSourceError(
            f"model family '{name}': padding_sides must list left and/or right, not {sides}"
        )
    # the fused graph is built only for a family with onnxruntime.transformers' model type
    built = [o for o in ONNX_OPTIMIZERS if o != "transformers" or declaration["ort_optimizer"]]
    if declaration["engine_export"] not in built:
        raise ModelSourceError(
            f"model family '{name}': engine_export is {declaration['engine_export']!r}, "
            f"not one of its exports ({', '.join(built)})"
        )
    parts = set(declaration["matmul_parts"])
    if parts != {"attention", "ffn_in", "ffn_out"}:
        raise ModelSourceError(
            f"model family '{name}': matmul_parts must name attention, ffn_in and ffn_out, not {', '.join(sorted(parts))}"
        )
    return declaration


def family(name: str) -> dict:
    """A family's declaration by name (a model's `architecture` in the config)."""
    if name not in FAMILIES:
        raise ModelSourceError(f"unknown model family '{name}' (known: {', '.join(FAMILIES)})")
    return check_family(name, FAMILIES[name]) | {"name": name}


def model_family(config: dict, model: str) -> dict:
    """The family of one of the config's models."""
    return family(config["models"][model]["architecture"])


def resolved_export(optimizer: str, declared: dict) -> str:
    """The ONNX file a runtime's `optimizer` option names for a model of family `declared`:
    `family` is the family's own engine_export, any other value itself."""
    return declared["engine_export"] if optimizer == FAMILY_EXPORT else optimizer


def declared_config(model_cfg: dict) -> dict:
    """A synthetic model's config.json values: its family's real config with the depth (and for
    smoke runs, the width) the model entry overrides. No library is imported: the plan reads it
    for memory requests, the build hands it to transformers."""
    declared = family(model_cfg["architecture"])
    values = dict(declared["config"])
    if model_cfg.get("layers"):
        if model_cfg["layers"] > values["num_hidden_layers"]:
            raise ModelSourceError(
                f"model '{model_cfg.get('name')}': layers {model_cfg['layers']} is more than "
                f"{declared['name']}'s {values['num_hidden_layers']}"
            )
        values["num_hidden_layers"] = model_cfg["layers"]
    heads = values["num_attention_heads"]
    for key in ("hidden_size", "num_attention_heads", "intermediate_size"):
        if model_cfg.get(key):
            values[key] = model_cfg[key]
    narrowed = model_cfg.get("hidden_size") or model_cfg.get("num_attention_heads")
    if narrowed and "head_dim" in values:  # heads split the narrowed width; key-value groups kept
        values["head_dim"] = values["hidden_size"] // values["num_attention_heads"]
        group = heads // values["num_key_value_heads"]
        values["num_key_value_heads"] = max(1, values["num_attention_heads"] // group)
    for tied in ("embedding_size", "pooler_hidden_size"):
        if tied in values:
            values[tied] = values["hidden_size"]
    values["initializer_range"] = model_cfg.get("init_std", 0.02)
    values["architectures"] = [declared["class"]]
    return values


def family_of_class(hf_class: str) -> dict:
    """The family whose reward-model class is `hf_class` (a loaded model or its config.json)."""
    for name, declaration in FAMILIES.items():
        if declaration["class"] == hf_class:
            return family(name)
    raise ModelSourceError(
        f"{hf_class} is none of the declared families' classes "
        f"({', '.join(d['class'] for d in FAMILIES.values())}); declare its family in rmbench/models/families.py"
    )


# The file a built tokenizer or model folder names its family in (hub folders: their config.json).
FAMILY_FILE = "rmbench_family.json"


def family_of_folder(folder: str | Path) -> dict:
    """The family of a tokenizer or model folder: the one the pipeline wrote there, else the one
    whose class its config.json names (a hub or local model)."""
    folder = Path(folder)
    if (folder / FAMILY_FILE).exists():
        return family(json.loads((folder / FAMILY_FILE).read_text())["family"])
    if (folder / "config.json").exists():
        classes = json.loads((folder / "config.json").read_text()).get("architectures") or ["?"]
        return family_of_class(classes[0])
    raise ModelSourceError(
        f"{folder} names no model family: it has neither {FAMILY_FILE} (written by the tokenizer "
        "rule) nor a config.json whose architectures say the class"
    )


def family_of_config(config: dict) -> dict:
    """The family of a model's config.json contents."""
    return family_of_class((config.get("architectures") or ["?"])[0])


def write_family(folder: str | Path, name: str) -> None:
    Path(folder, FAMILY_FILE).write_text(json.dumps({"family": name}) + "\n")


# Where a stand-in model's folder is written (models.<name>.stand_in; rule stand_in_model).
STAND_IN_PATH = "results/stand-in/{model}"


def check_models(config: dict) -> None:
    """Stops with a clear message where a model asks its family for more layers than it has, or
    a stand-in is not a local model read from the folder its rule writes."""
    for name, cfg in config["models"].items():
        declared = family(cfg["architecture"])
        most = declared["config"]["num_hidden_layers"]
        if cfg.get("layers", 0) > most:
            raise ModelSourceError(f"models.{name}.layers is {cfg['layers']}: {declared['name']} has {most}")
        folder = STAND_IN_PATH.format(model=name)
        if cfg.get("stand_in") and (cfg["source"] != "local" or cfg.get("local_path") != folder):
            raise ModelSourceError(
                f"models.{name}.stand_in: the pipeline writes the folder {folder}; give the model "
                f"source: local and local_path: {folder}"
            )
