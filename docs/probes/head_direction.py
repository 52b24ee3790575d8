"""Probe (outside the pipeline): does the fidelity gate's verdict on the embedded default depend on
which direction the random-weight model's reward head reads?

The head is linear in its input (the pooled feature), so one pass per precision gives every head's
scores: the pooled features of main60's and set150's chosen and rejected replies in fp32 and under
bf16 autocast (eager PyTorch, each row alone), then, for the model's own head and for other head
directions built from 48 generated calibration dialogues (the top principal direction of the
pooled features, random directions in their top-k principal subspace, random directions orthogonal
to their mean, as the model's own head is), how many pairs bf16 flips against fp32 and the
signal-to-noise ratio of the scores (std over rows / std of the bf16 change).

    .venv/bin/python docs/probes/head_direction.py deberta electra   # after the pipeline built
                                                                     # results/models and data
"""

import sys
from pathlib import Path

import numpy as np
import torch
import yaml
from snakemake.utils import validate

sys.path.insert(0, "workflow")
from rmbench.models.build import (
    CALIBRATION_ROWS,
    architecture,
    calibration_pairs,
    head_inputs,
    load_model,
    load_tokenizer,
    without_component,
)
from rmbench.models.data import read_jsonl

SETS = ("main60", "set150")


def pooled_features(model, final, tokenizer, pairs, bf16: bool) -> np.ndarray:
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        return head_inputs(model, final, tokenizer, pairs).double().numpy()


def head_directions(calibration: np.ndarray, own: np.ndarray, rng) -> list[tuple[str, np.ndarray]]:
    mean = calibration.mean(0)
    _, _, components = np.linalg.svd(calibration - mean, full_matrices=False)
    heads = [("own (random, orthogonal to the mean)", own), ("top principal direction", components[0])]
    for k in (4, 16, len(calibration) - 1):
        heads += [
            (f"random in top-{k} principal", components[:k].T @ rng.standard_normal(k)) for _ in range(3)
        ]
    for _ in range(5):
        heads.append(
            ("random orthogonal to the mean", without_component(rng.standard_normal(len(mean)), mean))
        )
    return heads


def probe(name: str) -> None:
    torch.set_num_threads(2)
    config = yaml.safe_load(Path("config.yaml").read_text())
    validate(config, "workflow/schemas/config.schema.yaml")  # fills the defaults, the model's seed too
    model_cfg = config["models"][name]
    model, tokenizer = load_model(f"results/models/{name}"), load_tokenizer(f"results/models/{name}")
    final = model.get_submodule(architecture(model_cfg["architecture"])["head"][-1])
    calibration = calibration_pairs(model_cfg["seed"], CALIBRATION_ROWS)
    heads = head_directions(
        pooled_features(model, final, tokenizer, calibration, bf16=False),
        final.weight.detach().double().numpy()[0],
        np.random.default_rng(0),
    )
    for set_name in SETS:
        rows = read_jsonl(f"results/data/{set_name}.jsonl")
        pairs = [(r["prompt"], r["response"]) for r in rows] + [(r["prompt"], r["rejected"]) for r in rows]
        fp32, bf16 = (pooled_features(model, final, tokenizer, pairs, bf16=b) for b in (False, True))
        n = len(rows)
        print(
            f"{name} {set_name}: bf16 moves the pooled feature by {np.linalg.norm(bf16 - fp32, axis=1).mean() / np.linalg.norm(fp32, axis=1).mean():.2%} of its length"
        )
        for label, w in heads:
            reward32, reward16 = fp32 @ w, bf16 @ w
            margin32, margin16 = reward32[:n] - reward32[n:], reward16[:n] - reward16[n:]
            flips = int(((margin32 > 0) != (margin16 > 0)).sum())
            snr = reward32.std() / (reward16 - reward32).std()
            spread = np.median(np.abs(margin32)) / reward32.std()
            print(
                f"  {label:38s} flips {flips:3d}/{n}  S/N {snr:6.1f}  median |margin| / reward std {spread:.2f}"
            )


if __name__ == "__main__":
    for model_name in sys.argv[1:]:
        probe(model_name)
