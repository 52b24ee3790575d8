"""Memory requests that follow the model's size.

A job asks for what its model needs at its peak: a base for the interpreter and its libraries,
plus some copies of the fp32 weights. A cluster executor places the job on a node with that much
(`mem_mb`); a local run caps its jobs with `--resources mem_mb=...`. A toy model asks for the
base; Llama-3.1-8B at full depth asks for 88 GB a launch.
"""

from __future__ import annotations

import math
from pathlib import Path

from rmbench.models.families import declared_config, family
from rmbench.probes.flops import layer_weight_shapes, model_config

# Python with PyTorch, ONNX Runtime, transformers and a tokenizer loaded, and no model (0.4-0.5
# GB each), with room for a second process: the FastAPI service's, torch.compile's compiler.
BASE_MB = 2000
# Copies of the fp32 weights each kind of job holds at its peak. Peaks measured on the default's
# 4-layer Qwen3 (834 MB of weights; run log 2026-12-07): building 1.5 GB, exporting 4.1 GB (the
# exporter traces, then writes the graph), an ONNX Runtime session 1.5 GB (its own copy and
# prepacked weights). A launch is given three copies: the engine's, a loading copy, activations.
# Quantizing and optimizing read one graph and write another.
WEIGHT_COPIES = {"launch": 3, "build": 2, "export": 4, "graph": 3, "reference": 2}
FP32_BYTES = 4


def model_shape(model_cfg: dict) -> dict:
    """The config.json values of the model an entry names, before it is built or downloaded: a
    local folder's own where it has one, else its family's (a synthetic model's with the entry's
    overrides; a hub model at the published shape)."""
    local = model_cfg.get("local_path")
    if model_cfg["source"] == "local" and local and Path(local, "config.json").is_file():
        return model_config(local)
    if model_cfg["source"] == "hub":
        declared = family(model_cfg["architecture"])
        return dict(declared["config"]) | {"architectures": [declared["class"]]}
    return declared_config(model_cfg)  # synthetic, or a stand-in not yet written


def parameter_count(shape: dict) -> int:
    """Weights of a model of this config.json shape: every layer's matrices and the token
    embeddings (biases, norms, position tables and the one-logit head are a rounding error)."""
    per_layer = sum(k * n for _, k, n in layer_weight_shapes(shape))
    width = shape.get("embedding_size") or shape["hidden_size"]
    return per_layer * shape["num_hidden_layers"] + shape["vocab_size"] * width


def job_mem_mb(model_cfg: dict, job: str) -> int:
    """The memory request of a `job` (a WEIGHT_COPIES kind) on this model, rounded up to 500 MB."""
    weights_mb = parameter_count(model_shape(model_cfg)) * FP32_BYTES / 2**20
    return int(math.ceil((BASE_MB + WEIGHT_COPIES[job] * weights_mb) / 500) * 500)
