"""Matmul FLOPs of one forward pass, to turn a measured latency into an achieved FLOP/s.

Counted: the work any runtime must do for a row of n tokens. Per encoder layer, the Q, K, V and
output projections (4 x 2nH^2), the FFN (2 x 2nHI), attention scores and the weighted sum
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


def encoder_flops(config: dict, tokens: int) -> float:
    n, h, i = tokens, config["hidden_size"], config["intermediate_size"]
    per_layer = 4 * 2 * n * h * h + 2 * 2 * n * h * i + 2 * 2 * n * n * h
    if config.get("relative_attention"):
        span = config.get("position_buckets", -1)
        if span <= 0:
            span = config.get("max_relative_positions", -1)
        if span <= 0:
            span = config["max_position_embeddings"]
        per_layer += len(config.get("pos_att_type") or []) * 2 * n * min(2 * n - 1, 2 * span) * h
    return float(per_layer * config["num_hidden_layers"])


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
