"""Probe (outside the pipeline): one model's ONNX exports in one process, interleaved.

Launches of one cell move 10-25% with the host's phases (run log 2026-12-05), so launch-level
comparisons of exports a few percent apart stay undecided. Here one ORT-Python process holds a
session on each export named (rmbench.export.onnx_files.ATTENTION_EXPORTS, or `transformers`: the
fused graph) and scores main60's first 30 rows on each in turn, the order rotating every round.
Each round's median row time is one value; the ratios are paired by round, so a phase that lasts
longer than a round falls on every export alike. 2 intra-op threads, 3 warm-up rows, as a latency launch.

    PYTHONPATH=workflow .venv/bin/python docs/probes/interleaved_exports.py results MODEL 16 [export ...]
    # after the pipeline built results/onnx/MODEL/ with those exports (and the native engine for
    # its operator's exports); exports: rmbench.export.onnx_files.ATTENTION_EXPORTS (all by default) or
    # `transformers`, each compared with the next
"""

import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from rmbench.export.onnx_files import ATTENTION_EXPORTS, NATIVE_OPERATOR_EXPORTS, ONNX_OPTIMIZERS, onnx_file
from rmbench.models.build import encode, load_tokenizer
from scipy import stats

ROWS, WARMUP, THREADS = 30, 3, 2


def session(path: Path, operators: Path | None = None):
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = THREADS, 1
    if operators:
        options.register_custom_ops_library(str(operators))
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def paired_ratio(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """Geometric mean of a/b over rounds with its 95% t-interval."""
    logs = np.log(np.array(a) / np.array(b))
    half = stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / np.sqrt(len(logs))
    return tuple(float(np.exp(v)) for v in (logs.mean(), logs.mean() - half, logs.mean() + half))


def main(results: Path, model: str, rounds: int, exports: list[str]) -> None:
    known = ["stock"] + [o for o in ONNX_OPTIMIZERS if o != "none"]  # `stock` names the plain export
    if unknown := [name for name in exports if name not in known]:
        sys.exit(f"unknown exports {unknown}: choose from {', '.join(known)}")
    operators = results / "native/bin/librmbench_ops.so"
    sessions = {
        name: session(
            results.parent / onnx_file(model, optimizer="none" if name == "stock" else name),
            operators if name in NATIVE_OPERATOR_EXPORTS else None,
        )
        for name in exports
    }
    tokenizer = load_tokenizer(results / f"models/{model}")
    names = {i.name for i in next(iter(sessions.values())).get_inputs()}
    lines = (results / "data/main60.jsonl").read_text().splitlines()[: WARMUP + ROWS]
    feeds = []
    for row in map(json.loads, lines):
        encoded = encode(tokenizer, [(row["prompt"], row["response"])], "np")
        feeds.append({k: np.asarray(v, dtype=np.int64) for k, v in encoded.items() if k in names})
    for s in sessions.values():
        for feed in feeds[:WARMUP]:
            s.run(None, feed)
    first = [sessions[exports[0]].run(None, feed)[0] for feed in feeds]
    for name in exports[1:]:
        gap = max(float(np.abs(sessions[name].run(None, f)[0] - o).max()) for f, o in zip(feeds, first))
        print(f"{name}: largest score difference from {exports[0]} {gap:.1e}")
    order, times = list(sessions), {k: [] for k in sessions}
    for r in range(rounds):
        for name in order[r % len(order) :] + order[: r % len(order)]:
            row_s = []
            for feed in feeds[WARMUP:]:
                start = time.perf_counter()
                sessions[name].run(None, feed)
                row_s.append(time.perf_counter() - start)
            times[name].append(1e3 * float(np.median(row_s)))
        print(f"round {r}: " + ", ".join(f"{k} {v[-1]:.1f} ms" for k, v in times.items()), flush=True)
    for a, b in itertools.pairwise(exports):
        ratio, lo, hi = paired_ratio(times[a], times[b])
        print(f"{a} / {b}: {ratio:.3f} [{lo:.3f}, {hi:.3f}], paired over {rounds} rounds")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4:] or list(ATTENTION_EXPORTS))
