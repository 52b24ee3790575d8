"""Matmul FLOPs of one forward pass, to turn a measured latency into an achieved FLOP/s.

Counted: the work any runtime must do for a row of n tokens. Per layer, the Q, K, V and output
projections (4 x 2nH^2 for an encoder; grouped-query attention's K and V are narrower), the
feed-forward (2 x 2nHI, or 3 x 2nHI for SwiGLU), attention scores and the weighted sum
(2 x 2n^2H), and for DeBERTa's disentangled attention the content-to-position and
position-to-content scores against the relative positions a row of n tokens has, at most 2k
(2 x 2n min(2n-1, 2k) H, k = position buckets: the stock export scores all 2k, the relative-shift
export only the 2n-1 distances, so the smaller is what a runtime must do). Not counted: the projections
of DeBERTa's relative-position embeddings, which do not depend on the input (a runtime that
folds them as constants skips them; eager recomputes them every call), and the embedding,
pooler and head (small).
"""

from __future__ import annotations

import json
from pathlib import Path

from rmbench.models.families import family_of_config


def _position_span(config: dict) -> int:
    """k: DeBERTa's relative positions run from -k to k (its position buckets, else its maximum)."""
    span = config.get("position_buckets", -1)
    if span <= 0:
        span = config.get("max_relative_positions", -1)
    if span <= 0:
        span = config["max_position_embeddings"]
    return span


def attention_width(config: dict) -> int:
    """Query heads x head width: the hidden size, except where a decoder sets its own head_dim."""
    heads = config["num_attention_heads"]
    return heads * config.get("head_dim", config["hidden_size"] // heads)


def layer_weight_shapes(config: dict) -> list[tuple[str, int, int]]:
    """(name, k, n) of every weight matrix of one layer, as its family declares the feed-forward:
    query and output at the heads' width, key and value at the key-value heads' (grouped-query
    attention shares them), and two feed-forward matrices or SwiGLU's three."""
    h, i = config["hidden_size"], config["intermediate_size"]
    heads = config["num_attention_heads"]
    q = attention_width(config)
    kv = q // heads * config.get("num_key_value_heads", heads)
    shapes = [("query", h, q), ("key", h, kv), ("value", h, kv), ("attention_output", q, h)]
    if family_of_config(config)["ffn_matrices"] == 3:
        shapes.append(("ffn_gate", h, i))
    return [*shapes, ("ffn_up", h, i), ("ffn_down", i, h)]


def weight_gemm_flops(config: dict, tokens: int) -> float:
    """The products with weight matrices of a row of n tokens, every layer."""
    per_layer = sum(2 * tokens * k * n for _, k, n in layer_weight_shapes(config))
    return float(per_layer * config["num_hidden_layers"])


def encoder_flops(config: dict, tokens: int) -> float:
    """Every matmul of a row of n tokens: the weight products, the attention scores and weighted
    sum over all n x n pairs (a causal mask saves no runtime here the work), DeBERTa's position terms."""
    n, h = tokens, config["hidden_size"]
    per_layer = 2 * 2 * n * n * attention_width(config)
    if config.get("relative_attention"):
        span = _position_span(config)
        per_layer += len(config.get("pos_att_type") or []) * 2 * n * min(2 * n - 1, 2 * span) * h
    return weight_gemm_flops(config, tokens) + float(per_layer * config["num_hidden_layers"])


def relative_projection_flops(config: dict) -> float:
    """DeBERTa's projections of its 2k relative-position embeddings per layer, once per call
    whatever the batch (eager and torch.compile without freezing compute them; a runtime that
    folds constants does not): the query and key projections where the attention shares them
    (DeBERTa-v3), else one per position term. Zero for a model without relative attention."""
    if not config.get("relative_attention"):
        return 0.0
    h = config["hidden_size"]
    projections = 2 if config.get("share_att_key") else len(config.get("pos_att_type") or [])
    return float(projections * 2 * (2 * _position_span(config)) * h * h * config["num_hidden_layers"])


def model_config(model_dir: str | Path) -> dict:
    return json.loads((Path(model_dir) / "config.json").read_text())


def achieved_gflops(
    model_dir, rows: list[dict], model: str, latencies_ms: list[float], max_length: int
) -> float:
    """Total model FLOPs of the rows over their total measured time (tokenization included);
    NaN for rows without token counts (rows not written by the sample_set rule)."""
    if any(f"tokens_{model}" not in row for row in rows):
        return float("nan")
    config = model_config(model_dir)
    flops = sum(encoder_flops(config, min(row[f"tokens_{model}"], max_length)) for row in rows)
    return flops / (sum(latencies_ms) * 1e-3) / 1e9
