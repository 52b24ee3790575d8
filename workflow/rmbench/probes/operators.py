"""Where a runtime's time goes, by operator type, from ONNX Runtime's (and PyTorch's) profiler.

- operator_profile / operator_table: ONNX Runtime's time per operator type on rows alone: the
  share in matrix products bounds how close to the GEMM ceiling a model can get (decomposition).
- batch_operator_table: the same rows alone and as batches of copies of themselves, per export or
  PyTorch runtime: which operators cost more per row in a batch (batching study).
"""

from __future__ import annotations

import bisect
import json
import math
import tempfile
import time
from collections import Counter
from pathlib import Path

import pandas as pd

from rmbench.export.onnx import ort_scores, ort_session
from rmbench.models.build import load_tokenizer

# Operator types that are matrix products (what the GEMM ceiling measures): ONNX Runtime's, fp32
# and int8, and PyTorch's as its profiler names them (eager's and those Inductor calls out to).
# ONNX Runtime's fused attention operators count too: their two matrix products per head are the
# FLOP model's attention work, and most of their time (the softmax between them is the rest).
MATRIX_OPS = {
    "Attention",
    "MultiHeadAttention",
    "MatMul",
    "FusedMatMul",
    "Gemm",
    "MatMulInteger",
    "MatMulIntegerToFloat",
    "DynamicQuantizeMatMul",
    "aten::addmm",
    "aten::mm",
    "aten::bmm",
    "aten::baddbmm",
    "mkldnn::_linear_pointwise",
}


def operator_profile(*args, **kwargs) -> dict:
    """Each pair scored alone by ORT (graph level all) with its profiler on; the kernel time of
    every operator after `warmup` rows, summed by operator type, per row. Profiling slows every
    operator a little, so this gives shares, not latencies (those come from the study's launches).
    operator_profiles' arguments but `batches`."""
    return operator_profiles(*args, batches=(1,), **kwargs)[1]


def operator_profiles(
    onnx_path: Path,
    model_dir: Path,
    pairs: list[tuple[str, str]],
    threads: int,
    warmup: int,
    max_length: int,
    batches: tuple[int, ...],
    operators: Path | None = None,
) -> dict[int, dict]:
    """operator_profile per batch size: each pair scored as a batch of b copies of itself (no
    padding) for every b in `batches` in turn, in one session, so that the machine's drift falls on
    every batch size alike; each run's operators are counted for its batch size, per row scored.
    `operators`: the native engine's operator library, for exports that call its operators."""
    tokenizer = load_tokenizer(model_dir)
    call_s = []  # each call's wall time, tokenizing included, in the order the runs were
    with tempfile.TemporaryDirectory() as tmp:
        session = ort_session(onnx_path, threads, profile_prefix=str(Path(tmp) / "ort"), operators=operators)
        for pair in pairs:
            for batch in batches:
                start = time.perf_counter()
                ort_scores(session, tokenizer, [pair] * batch, max_length)
                call_s.append(time.perf_counter() - start)
        events = json.loads(Path(session.end_profiling()).read_text())
    runs = sorted((e for e in events if e.get("name") == "model_run"), key=lambda e: e["ts"])
    if len(runs) <= warmup * len(batches):
        raise ValueError(f"operator profile: {len(runs)} runs recorded, none after {warmup} warm-up rows")
    starts = [run["ts"] for run in runs]
    counted = range(warmup * len(batches), len(runs))
    run_us = {
        batch: sum(runs[i]["dur"] for i in counted if batches[i % len(batches)] == batch) for batch in batches
    }
    call_ms = {
        batch: sum(call_s[i] for i in counted if batches[i % len(batches)] == batch) * 1e3
        for batch in batches
    }
    by_type: dict[int, Counter] = {batch: Counter() for batch in batches}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            run = bisect.bisect_right(starts, e["ts"]) - 1  # the run this kernel ran in
            if run >= warmup * len(batches):
                by_type[batches[run % len(batches)]][e["args"]["op_name"]] += e["dur"]
    rows = len(runs) // len(batches) - warmup
    profiles = {}
    for batch, times in by_type.items():
        total, measured = sum(times.values()), rows * batch
        profiles[batch] = {
            "rows": measured,
            "batch": batch,
            "threads": threads,
            # the whole session.run (kernels and what runs between them), per row
            "run_ms_per_row": run_us[batch] / 1000 / measured,
            # the whole call: tokenizing, feeding and session.run, as a launch times a row
            "call_ms_per_row": call_ms[batch] / measured,
            "operators": [
                {"op_type": op, "ms_per_row": us / 1000 / measured, "share": us / total}
                for op, us in times.most_common()
            ],
            "matrix_share": sum(us for op, us in times.items() if op in MATRIX_OPS) / total,
        }
    return profiles


def operator_table(profiles: dict[str, dict], top: int = 6) -> pd.DataFrame:
    """Per model: its `top` operator types by time, the rest as 'other', and the matrix products'
    share of all operator time."""
    rows = []
    for model, profile in sorted(profiles.items()):
        ops = profile["operators"]
        shown = ops[:top] + (
            [
                {
                    "op_type": f"other ({len(ops) - top} types)",
                    "ms_per_row": sum(o["ms_per_row"] for o in ops[top:]),
                    "share": sum(o["share"] for o in ops[top:]),
                }
            ]
            if len(ops) > top
            else []
        )
        rows += [{"model": model} | o for o in shown]
        rows.append(
            {
                "model": model,
                "op_type": "matrix products",
                "ms_per_row": math.nan,
                "share": profile["matrix_share"],
            }
        )
    return pd.DataFrame(rows, columns=["model", "op_type", "ms_per_row", "share"])


# The batch operator table's rows that are not one operator: the kernels' sum, and the whole
# session.run (ONNX Runtime) or score call (PyTorch, tokenizing included)
TOTAL, SESSION_RUN, WHOLE_CALL = "total", "session run", "whole call"


SUMMARY_ROWS = (TOTAL, SESSION_RUN, WHOLE_CALL)


_WHOLE_RUNS = {"run_ms_per_row": SESSION_RUN, "call_ms_per_row": WHOLE_CALL}


def _operator_change(op_type: str, alone_ms: float, batch_ms: float, extra_total: float) -> dict:
    return {
        "op_type": op_type,
        "ms_per_row_alone": alone_ms,
        "ms_per_row_batched": batch_ms,
        "ratio": batch_ms / alone_ms if alone_ms else math.nan,
        "extra_ms_per_row": batch_ms - alone_ms,
        "share_of_extra": (batch_ms - alone_ms) / extra_total if extra_total else math.nan,
        "matrix_product": op_type in MATRIX_OPS,
    }


def _operator_rates(op_type: str, alone: dict, batched: dict) -> dict:
    """Where both profiles know an operator's work (GFLOP per row, `work_gflop_per_row`) and timed
    it: the work per row alone and batched and the GFLOP/s each achieved, so a batch's saving
    splits into less work per row and a faster rate; nothing otherwise."""
    rates = {}
    for name, profile in (("alone", alone), ("batched", batched)):
        work = profile.get("work_gflop_per_row", {}).get(op_type)
        ms = sum(o["ms_per_row"] for o in profile["operators"] if o["op_type"] == op_type)
        if work is None or not ms:
            return {}
        rates |= {f"gflop_per_row_{name}": work, f"gflops_{name}": work / ms * 1e3}
    return rates


def batch_operator_table(
    profiles: dict[tuple[str, str], dict[int, dict]], by: str = "optimizer"
) -> pd.DataFrame:
    """Per model, `by` (ORT: the export, `optimizer`; PyTorch: the `runtime`) and operator type,
    the kernel time per row with each row alone and in a batch of copies of itself (`profiles`:
    (model, by) -> operator_profiles or torch_operator_profiles of batch sizes 1 and one more): the
    ratio, the extra milliseconds per row the batch costs (negative: saves), and that as a share
    of the whole difference; a 'total' row per model and `by` (the kernels' sum) and, where
    profiled, a 'session run' row (ORT's whole session.run) and a 'whole call' row (the score
    call, tokenizing included; PyTorch's profiles have this one only). Where a batch without
    padding is no faster per row, this says which operators keep it so; where it is faster,
    which make it so."""
    rows = []
    for (model, variant), by_batch in sorted(profiles.items()):
        (alone, one), (size, batched) = sorted(by_batch.items())
        if alone != 1:
            raise ValueError(
                f"{model}: batch operator profiles need batch 1 and one larger, not {sorted(by_batch)}"
            )
        ms = {
            b: {o["op_type"]: o["ms_per_row"] for o in p["operators"]} for b, p in ((1, one), (size, batched))
        }
        extra_total = sum(ms[size].values()) - sum(ms[1].values())
        key = {"model": model, by: variant, "batch": size}
        ops = sorted(
            ms[1].keys() | ms[size].keys(), key=lambda o: (-abs(ms[size].get(o, 0) - ms[1].get(o, 0)), o)
        )
        rows += [
            key
            | _operator_change(op, ms[1].get(op, 0.0), ms[size].get(op, 0.0), extra_total)
            | _operator_rates(op, one, batched)
            for op in ops
        ]
        rows.append(key | _operator_change(TOTAL, sum(ms[1].values()), sum(ms[size].values()), extra_total))
        for field, label in _WHOLE_RUNS.items():  # no share: not part of the kernels' sum
            if field in one:
                rows.append(key | _operator_change(label, one[field], batched[field], math.nan))
    return pd.DataFrame(rows)
