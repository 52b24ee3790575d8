"""Does a CPU batch use ONNX Runtime's threads better than a row alone? The batching study's
"find out why" asks about thread settings, sequential vs parallel execution and inter-op threads.

One session per thread setting on the same file, in one process. Each of a set's first rows is
scored alone and as a batch of copies of itself (no padding, so padding cannot explain anything),
on every session in turn, row by row, the orders alternating, so that the machine's drift falls
on every setting and batch size alike. Per setting: session.run time per row, alone and batched,
and against the first setting (the project's: every core in one intra-op pool, sequential
execution, one inter-op thread).
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from rmbench.export.onnx import ort_feed, ort_session
from rmbench.models.build import encode, load_tokenizer


def setting_name(setting: dict) -> str:
    """'intra_all-sequential-inter_1': the setting as the config gives it (intra-op threads 0: every
    core the project uses), so that a name means the same on any machine."""
    intra = setting["intra_op_threads"] or "all"
    return f"intra_{intra}-{setting['execution']}-inter_{setting['inter_op_threads']}"


def thread_probe(
    onnx_path: Path,
    model_dir: Path,
    pairs: list[tuple[str, str]],
    settings: list[dict],
    threads: int,
    batch: int,
    warmup: int,
    max_length: int,
    passes: int = 2,
) -> list[dict]:
    """Per setting (intra_op_threads, 0 for `threads`; execution; inter_op_threads): ms per row of
    session.run over the pairs after `warmup`, alone and as batches of `batch` copies, `passes`
    times over the rows."""
    tokenizer = load_tokenizer(model_dir)
    sessions = [
        ort_session(
            onnx_path,
            s["intra_op_threads"] or threads,
            execution=s["execution"],
            inter_op_threads=s["inter_op_threads"],
        )
        for s in settings
    ]
    sizes = (1, batch)
    feeds = [
        {b: ort_feed(sessions[0], encode(tokenizer, [pair] * b, "np", max_length)) for b in sizes}
        for pair in pairs
    ]
    if len(feeds) <= warmup:
        raise ValueError(f"thread probe: {len(feeds)} rows, none after {warmup} warm-up rows")
    for feed in feeds[:warmup]:
        for session in sessions:
            for b in sizes:
                session.run(None, feed[b])
    seconds = [dict.fromkeys(sizes, 0.0) for _ in settings]
    timed = feeds[warmup:]
    for repeat in range(passes):
        for i, feed in enumerate(timed):
            order = list(range(len(sessions)))
            for k in order if (i + repeat) % 2 == 0 else order[::-1]:
                for b in sizes if i % 2 == 0 else sizes[::-1]:
                    start = time.perf_counter()
                    sessions[k].run(None, feed[b])
                    seconds[k][b] += time.perf_counter() - start
    rows = passes * len(timed)
    return [
        setting
        | {
            "name": setting_name(setting),
            "threads_used": setting["intra_op_threads"] or threads,
            "batch": batch,
            "rows": rows,
            "alone_ms_per_row": 1e3 * seconds[k][1] / rows,
            "batched_ms_per_row": 1e3 * seconds[k][batch] / (rows * batch),
        }
        for k, setting in enumerate(settings)
    ]


def thread_table(probes: dict[str, list[dict]]) -> pd.DataFrame:
    """One row per model and setting: ms per row alone and batched, batched over alone (below 1: the
    batch is cheaper per row), and each against the first setting's (above 1: slower)."""
    rows = []
    for model, results in probes.items():
        reference = results[0]
        for r in results:
            rows.append(
                {
                    "model": model,
                    "setting": r["name"],
                    "threads_used": r["threads_used"],
                    "batch": r["batch"],
                    "rows": r["rows"],
                    "alone_ms_per_row": r["alone_ms_per_row"],
                    "batched_ms_per_row": r["batched_ms_per_row"],
                    "batched_vs_alone": r["batched_ms_per_row"] / r["alone_ms_per_row"],
                    "alone_vs_reference": r["alone_ms_per_row"] / reference["alone_ms_per_row"],
                    "batched_vs_reference": r["batched_ms_per_row"] / reference["batched_ms_per_row"],
                }
            )
    return pd.DataFrame(rows)


RATIOS = {
    "batched_vs_alone": "Batched/alone",
    "alone_vs_reference": "Alone vs first",
    "batched_vs_reference": "Batched vs first",
}
