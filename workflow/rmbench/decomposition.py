"""Where the eager -> ONNX Runtime speed-up comes from, and what reduced precision buys.

From the decomposition study's statistics (one step = one runtime x variant):
- gap_table: per model, the p50 of eager and of ORT at each graph optimization level, and the
  share of the eager -> ORT (all) gap that each step closes: kernels and runtime (eager -> ORT
  with graph optimizations disabled), constant folding and node elimination (-> basic), fusions
  (-> extended), layout transformations (-> all), then onnxruntime.transformers' offline fusions
  (beyond the gap: its share can pass 100%); plus eager through oneDNN's kernels (the kernel
  side alone, no graph change), torch.compile's freezing, and the achieved GFLOP/s of every step
  against the measured GEMM ceiling where the gemm study ran.
- operator_profile / operator_table: where ONNX Runtime's own time goes, by operator type, from
  its profiler: the share in matrix products bounds how close to the GEMM ceiling a model can get.
- fidelity_table: every reduced-precision variant's gate (preference agreement, |delta|) beside
  its speed-up against the same runtime in fp32 and against fp32 ONNX Runtime, with CIs' verdicts.
- sweep_table: the gate of every int8 setting of the quantization sweep (quantizer options, which
  MatMuls), untimed: whether any setting keeps fp32's preferences.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import tempfile
from collections import Counter
from pathlib import Path

import pandas as pd

from .cells import format_params, parse_params
from .export import GRAPH_LEVELS, ort_scores, ort_session
from .models import load_tokenizer
from .precision import gate_verdict, preference_fidelity
from .provenance import host_label
from .stats import agreement_interval, cell_hosts, host_cell, pairs_to_show
from .tables import fmt_ci, fmt_pct, hosts_sentence, simple_latex, step_name

# What each ONNX Runtime graph level adds to the one before (config steps are
# "ort_python graph=<level>"; ORT-Python without a graph key runs at "all").
ORT_LEVEL_ADDS = {
    "disabled": "kernels and runtime (eager -> ORT, no graph optimization)",
    "basic": "constant folding, redundant nodes",
    "extended": "fusions (attention, GELU, layer norm)",
    "all": "layout transformations",
}
ORT_FP32 = "ort_python graph=all"
POOLED_SET = "pooled"  # the fidelity table's gate over every gated set's pairs together


def with_param(step: str, key: str, value: str) -> str:
    """A step's name with one more setting, in the order config writes it last:
    ('hf_eager precision=fp32', 'kernels', 'onednn') -> 'hf_eager precision=fp32 kernels=onednn'."""
    return f"{step} {key}={value}"


def fp32_counterparts(step: str) -> list[str]:
    """The names the same runtime and settings may have in fp32, in order of preference (an int8
    step's MatMul group and a bf16 step's head precision have no fp32 meaning): 'native
    precision=int8 matmuls=attention' -> ['native precision=fp32', 'native']."""
    step = re.sub(r" (matmuls|head)=\S+", "", step)
    return [re.sub(r"precision=\w+", "precision=fp32", step), re.sub(r" precision=\w+", "", step)]


def _metric(summary: pd.DataFrame, step: str, metric: str = "p50_ms") -> float:
    row = summary[(summary["step"] == step) & (summary["launches_ok"] > 0)]
    return float(row[metric].iloc[0]) if len(row) else math.nan


def gap_table(
    summary: pd.DataFrame,
    baseline: str,
    ceilings: dict[str, tuple[str, float]] | None = None,
    in_launch: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per model and step of each path from eager (`path`: to ONNX Runtime's levels, to
    oneDNN's kernels, to torch.compile and freezing, from ORT to the relative-shift export): p50
    with its CI, the milliseconds it saves against the step before, that as a share of the whole
    eager -> ORT gap (ORT path), achieved GFLOP/s and the fraction of the gemm study's ceiling,
    and (`in_launch`, rmbench.roofline.in_launch_fractions by model and step) the fraction of the
    ceiling probed in each launch with its interval. Eager through oneDNN is named as the baseline
    plus `kernels=onednn`."""
    chains = {
        "onnxruntime": [(baseline, "eager (reference)")]
        + [(f"ort_python graph={level}", ORT_LEVEL_ADDS[level]) for level in GRAPH_LEVELS]
        + [(with_param(ORT_FP32, "optimizer", "transformers"), "onnxruntime.transformers offline fusions")],
        "onednn": [
            (baseline, "eager (reference)"),
            (with_param(baseline, "kernels", "onednn"), "oneDNN linear kernels"),
        ],
        "torch.compile": [
            (baseline, "eager (reference)"),
            ("torch_compile freezing=off", "torch.compile (Inductor)"),
            ("torch_compile freezing=on", "Inductor freezing: weights as constants"),
            # freezing also swaps every linear layer's kernel for a packed one: without that swap
            # the step is folding alone
            (
                "torch_compile freezing=on prepack=off",
                "the same on eager's BLAS products (no weight prepacking)",
            ),
        ],
        # another export of the same model, run at ORT's level all (a control on models without
        # relative attention, whose graph it leaves as it is)
        "export rewrite": [
            (ORT_FP32, ORT_LEVEL_ADDS["all"]),
            (with_param(ORT_FP32, "optimizer", "relative_shift"), "relative attention as a diagonal shift"),
        ],
    }
    ceilings = ceilings or {}
    probed = {} if in_launch is None else {(r.model, r.step): r for r in in_launch.itertuples()}
    rows = []
    for (model, device, set_name), group in summary.groupby(["model", "device", "set"], sort=True):
        p50 = {step: _metric(group, step) for step in group["step"]}
        hosts = dict(zip(group["step"], group["host"])) if "host" in group else {}
        total = p50.get(baseline, math.nan) - p50.get(ORT_FP32, math.nan)
        listed = set()
        for chain_index, (path, chain) in enumerate(chains.items()):
            before = math.nan
            for step, what in chain:
                if math.isnan(p50.get(step, math.nan)):
                    continue  # not configured (a step skipped closes its gap in the next one)
                if step not in listed:  # eager (and ORT all) open several paths: listed once
                    listed.add(step)
                    saved = before - p50[step]
                    gflops = _metric(group, step, "gflops")
                    probe = probed.get((model, step))
                    rows.append(
                        {
                            "model": model,
                            "device": device,
                            "set": set_name,
                            "path": path,
                            "step": step,
                            "adds": what,
                            "p50_ms": p50[step],
                            "p50_ms_lo": _metric(group, step, "p50_ms_lo"),
                            "p50_ms_hi": _metric(group, step, "p50_ms_hi"),
                            "speedup_vs_eager": p50.get(baseline, math.nan) / p50[step],
                            "saves_ms": saved,
                            "share_of_gap": saved / total if chain_index == 0 and total > 0 else math.nan,
                            "gflops": gflops,
                            "fraction_of_ceiling": gflops / ceilings.get(model, ("", math.nan))[1],
                            "host": hosts.get(step, ""),
                        }
                        | {
                            column: getattr(probe, column, math.nan)
                            for column in (
                                "fraction_in_launch",
                                "fraction_in_launch_lo",
                                "fraction_in_launch_hi",
                            )
                        }
                    )
                before = p50[step]
    return pd.DataFrame(rows)


# Operator types that are matrix products (what the GEMM ceiling measures): ONNX Runtime's, fp32
# and int8, and PyTorch's as its profiler names them (eager's and those Inductor calls out to).
MATRIX_OPS = {
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


def operator_profile(
    onnx_path: Path, model_dir: Path, pairs: list[tuple[str, str]], threads: int, warmup: int, max_length: int
) -> dict:
    """Each pair scored alone by ORT (graph level all) with its profiler on; the kernel time of
    every operator after `warmup` rows, summed by operator type, per row. Profiling slows every
    operator a little, so this gives shares, not latencies (those come from the study's launches)."""
    return operator_profiles(onnx_path, model_dir, pairs, threads, warmup, max_length, (1,))[1]


def operator_profiles(
    onnx_path: Path,
    model_dir: Path,
    pairs: list[tuple[str, str]],
    threads: int,
    warmup: int,
    max_length: int,
    batches: tuple[int, ...],
) -> dict[int, dict]:
    """operator_profile per batch size: each pair scored as a batch of b copies of itself (no
    padding) for every b in `batches` in turn, in one session, so that the machine's drift falls on
    every batch size alike; each run's operators are counted for its batch size, per row scored."""
    tokenizer = load_tokenizer(model_dir)
    with tempfile.TemporaryDirectory() as tmp:
        session = ort_session(onnx_path, threads, profile_prefix=str(Path(tmp) / "ort"))
        for pair in pairs:
            for batch in batches:
                ort_scores(session, tokenizer, [pair] * batch, max_length)
        events = json.loads(Path(session.end_profiling()).read_text())
    runs = sorted((e for e in events if e.get("name") == "model_run"), key=lambda e: e["ts"])
    if len(runs) <= warmup * len(batches):
        raise ValueError(f"operator profile: {len(runs)} runs recorded, none after {warmup} warm-up rows")
    starts = [run["ts"] for run in runs]
    counted = range(warmup * len(batches), len(runs))
    run_us = {
        batch: sum(runs[i]["dur"] for i in counted if batches[i % len(batches)] == batch) for batch in batches
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
    profiled, a 'session run' row (ORT's whole session.run) or a 'whole call' row (the PyTorch
    runtime's score call). Where a batch without padding is no faster per row, this says which
    operators keep it so; where it is faster, which make it so."""
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


def batch_operator_latex(table: pd.DataFrame, top: int = 5, by: str = "optimizer") -> str:
    """The `top` operator types by |extra ms| per model and `by` (ORT: the export; PyTorch: the
    runtime), and the summary rows."""
    shown = pd.concat(
        part
        for _, group in table.groupby(["model", by])
        for part in (
            group[~group["op_type"].isin(SUMMARY_ROWS)].head(top),
            group[group["op_type"].isin(SUMMARY_ROWS)],
        )
    )
    ort = by == "optimizer"
    shown = shown.assign(
        # Inductor names a kernel after every operation it fused: the first ones say enough
        op_type=[op if len(op) <= 40 else op[:38] + "..." for op in shown["op_type"]],
        variant=[("stock" if v == "none" else v.replace("_", " ")) if ort else v for v in shown[by]],
        alone=[f"{m:.2f}" for m in shown["ms_per_row_alone"]],
        batched=[f"{m:.2f}" for m in shown["ms_per_row_batched"]],
        ratio=["--" if math.isnan(r) else f"{r:.2f}x" for r in shown["ratio"]],
        extra=[f"{m:+.2f}" for m in shown["extra_ms_per_row"]],
        share=["--" if math.isnan(s) else fmt_pct(s) for s in shown["share_of_extra"]],
    )
    columns = {
        "model": "Model",
        "variant": "Export" if ort else "Runtime",
        "op_type": "Operator",
        "alone": "Alone",
        "batched": "Batched",
        "ratio": "Ratio",
        "extra": "Extra ms",
        "share": "Of the change",
    }
    if "gflops_alone" in shown:  # the operators whose work is known: the rate each achieved
        shown["rate"] = [
            "" if math.isnan(a) else f"{a:.0f} / {b:.0f}"
            for a, b in zip(shown["gflops_alone"], shown["gflops_batched"])
        ]
        columns["rate"] = "GFLOP/s"
    batch = int(table["batch"].iloc[0])
    if ort:
        caption = (
            f"Where a CPU batch without padding spends its time: ONNX Runtime's kernel time per row (ms, from "
            f"its profiler) with each row alone and as a batch of {batch} copies of itself, "
            f"the operator types whose time per row changes most ({top} per model and export: the stock one, or "
            "DeBERTa's relative attention as a diagonal shift), and each one's share of the whole change. "
            "Each row alone and batched in turn, in one session; a few percent of an operator's time is "
            "noise, and profiling slows every operator a little: read the differences. Total: the kernels' sum; session run: all of "
            "\\texttt{session.run}."
        )
    else:
        caption = (
            f"Where a PyTorch batch without padding gains: each operator's own CPU time per row (ms, from "
            f"torch.profiler) in eager PyTorch and under torch.compile with each row alone and as a batch of "
            f"{batch} copies of itself, the operator types whose time per row changes most ({top} per model "
            "and runtime; Inductor's generated kernels by name), and each one's share of the whole change. "
            "Each row alone and batched in turn, in one process; profiling slows every operator a little, "
            "eager's many small ones most: read the differences. Total: the operators' sum; whole call: "
            "the runtime's score call, tokenizing included. GFLOP/s (alone / batched): the weight products' "
            "work per row (a batch shares DeBERTa's relative-position projections, one per call) over "
            "their time."
        )
    return simple_latex(
        shown,
        columns,
        caption + hosts_sentence(table, "Measured on"),
        "tab:batch-operators" if ort else "tab:torch-batch-operators",
    )


def operator_latex(table: pd.DataFrame) -> str:
    shown = table.assign(
        ms=["--" if math.isnan(m) else f"{m:.2f}" for m in table["ms_per_row"]],
        pct=[fmt_pct(s) if s >= 0.01 else "<1%" for s in table["share"]],
    )
    caption = (
        "Where ONNX Runtime's time goes (graph level all, fp32): kernel time per operator type from its "
        "profiler, mean per row over the decomposition rows after warm-up, and its share of all operator "
        "time; the last row of each model sums the matrix products (MatMul, FusedMatMul, Gemm), the "
        "part a faster GEMM can speed up. The profiler slows every operator a little: read the shares."
    ) + hosts_sentence(table, "Measured on")
    return simple_latex(
        shown,
        {"model": "Model", "op_type": "Operator", "ms": "ms per row", "pct": "Share"},
        caption,
        "tab:ort-operators",
    )


def fidelity_table(reports: list[dict], comparisons: pd.DataFrame, headline_set: str) -> pd.DataFrame:
    """One row per reduced-precision variant and gated set: the gate's numbers and verdict, and its
    p50 speed-up (point, conservative bound, verdict) against its own runtime in fp32 and against
    fp32 ORT where the set is timed (a set of `fidelity.sets` is gated only); `headline` marks
    the study's headline set."""
    vs = comparisons[comparisons["metric"] == "p50_ms"].set_index(
        ["model", "device", "set", "candidate", "baseline"]
    )
    rows = []
    for r in [*reports, *pooled_gates(reports)]:
        params = parse_params(r["params"])
        set_name, step = params["set"], step_name(r["runtime"], params)
        row = {
            "model": r["model"],
            "set": set_name,
            "headline": set_name == headline_set,
            "step": step,
            "precision": params.get("precision", "fp32"),
            "pairs": r["pairs"],
            "preference_agreement": r["preference_agreement"],
            "flipped": r["flipped"],
            "max_abs_delta": r["max_abs_delta"],
            "mean_abs_delta": r["mean_abs_delta"],
            "fp32_median_margin": r["fp32_median_margin"],
            "gate": "passed" if r["passed"] else "failed",
            "min_agreement": r["min_agreement"],
        }
        # the gate's (a pooled gate's: its sets'), then its speed-ups' launches
        hosts = set(r.get("hosts") or [host_label(r.get("provenance") or {})])
        for label, names in (("own_fp32", fp32_counterparts(step)), ("ort_fp32", [ORT_FP32])):
            keys = [(r["model"], "cpu", set_name, step, name) for name in names]
            key = next((k for k in keys if k in vs.index), keys[0])
            baseline, found = key[-1], vs.loc[key] if key in vs.index else None
            row |= {
                f"vs_{label}": baseline,
                f"speedup_vs_{label}": found["speedup"] if found is not None else math.nan,
                f"conservative_vs_{label}": found["speedup_conservative"] if found is not None else math.nan,
                f"verdict_vs_{label}": found["verdict"] if found is not None else "",
            }
            if found is not None:
                hosts.update(cell_hosts(found.get("host")))
        rows.append(row | {"host": host_cell(hosts)})
    if not rows:
        return pd.DataFrame()
    # each variant's gates together: the headline set's first, the pooled one last
    table = pd.DataFrame(rows)
    order = [0 if r.headline else 2 if r.set == POOLED_SET else 1 for r in table.itertuples()]
    table = table.assign(order=order).sort_values(["model", "step", "order"], kind="stable")
    return with_agreement_interval(table.drop(columns="order").reset_index(drop=True))


def pooled_gates(reports: list[dict]) -> list[dict]:
    """One more gate per variant gated on more than one set: every distinct pair of its sets
    together (a row drawn into two sets counts once). The strongest single verdict the sample
    sets allow: 60 pairs cannot show 99%, all four default sets' 324 nearly can."""
    variants: dict[tuple, list[dict]] = {}
    for r in reports:
        params = parse_params(r["params"])
        key = (r["model"], r["runtime"], format_params({k: v for k, v in params.items() if k != "set"}))
        variants.setdefault(key, []).append(r)
    pooled = []
    for (model, runtime, _), gates in variants.items():
        if len(gates) < 2:
            continue
        pairs = {}  # id -> (chosen, rejected, fp32 chosen, fp32 rejected)
        for g in gates:
            sides = zip(g["scores"], g["rejected_scores"], g["fp32_scores"], g["fp32_rejected_scores"])
            for row_id, scores in zip(g["ids"], sides):
                pairs.setdefault(row_id, scores)
        chosen, rejected, fp32_chosen, fp32_rejected = (list(side) for side in zip(*pairs.values()))
        found = preference_fidelity(chosen, rejected, fp32_chosen, fp32_rejected)
        share = max(g["min_agreement"] for g in gates)
        params = parse_params(gates[0]["params"]) | {"set": POOLED_SET}
        pooled.append(
            {"model": model, "runtime": runtime, "params": format_params(params)}
            | found
            | gate_verdict(found, share)
            | {"hosts": [host_label(g.get("provenance") or {}) for g in gates]}
        )
    return pooled


def with_agreement_interval(gates: pd.DataFrame) -> pd.DataFrame:
    """The gate table with the 95% Clopper-Pearson interval of each agreement over its pairs
    (agreement_lo, agreement_hi): 60 pairs cannot show 99% even when none flips."""
    if gates.empty:
        return gates
    bounds = [agreement_interval(n - flipped, n) for n, flipped in zip(gates["pairs"], gates["flipped"])]
    return gates.assign(agreement_lo=[lo for lo, _ in bounds], agreement_hi=[hi for _, hi in bounds])


def _speedup(point: float, conservative: float, verdict: str) -> str:
    """'1.32x (1.05) faster'; without the bound where the intervals leave it undefined."""
    if math.isnan(point):
        return "--"
    bound = "" if math.isnan(conservative) else f" ({conservative:.2f})"
    return f"{point:.2f}x{bound} {verdict}"


def gap_latex(gap: pd.DataFrame, set_name: str) -> str:
    shown = gap.assign(
        p50=[fmt_ci(r.p50_ms, r.p50_ms_lo, r.p50_ms_hi) for r in gap.itertuples()],
        speedup=[f"{s:.2f}x" for s in gap["speedup_vs_eager"]],
        saves=["--" if math.isnan(s) else f"{s:.1f}" for s in gap["saves_ms"]],
        share=[fmt_pct(s) for s in gap["share_of_gap"]],
        ceiling=[
            fmt_pct(r.fraction_of_ceiling)
            if math.isnan(r.fraction_in_launch)
            else fmt_pct(r.fraction_in_launch, r.fraction_in_launch_lo, r.fraction_in_launch_hi)
            for r in gap.itertuples()
        ],
    )
    columns = {
        "model": "Model",
        "step": "Step",
        "adds": "What the step adds",
        "p50": "p50 ms [95% CI]",
        "speedup": "vs eager",
        "saves": "Saves ms",
        "share": "Of the eager-ORT gap",
        "ceiling": "Of GEMM ceiling",
    }
    caption = (
        f"Where the CPU speed-up comes from on {set_name}: per-row p50 (mean over launches, 95\\% "
        "t-interval) of eager PyTorch (with its own and with oneDNN's linear kernels), ONNX Runtime at each "
        "graph optimization level, and torch.compile "
        "with and without freezing; the milliseconds each step saves against the one before it, as a share "
        "of the whole eager to ONNX Runtime (all optimizations) gap, and achieved GFLOP/s as a share of the "
        "best measured fp32 GEMM rate: probed in each launch right after its timed region where the study "
        "does (mean of the launches' fractions [95\\% t-interval]), else the gemm study's. Intervals and "
        "verdicts of every pair are in the decomposition table."
    ) + hosts_sentence(gap)
    return simple_latex(shown, columns, caption, "tab:decomposition-gap")


def _gate_cells(table: pd.DataFrame) -> dict[str, list[str]]:
    """The fidelity gate's columns as the fidelity and sweep tables print them."""
    return {
        "agreement": [
            f"{100 * a:.1f}% [{100 * lo:.2f}, {100 * hi:.2f}]"  # two places: 98.96 must not print as 99.0
            for a, lo, hi in zip(table["preference_agreement"], table["agreement_lo"], table["agreement_hi"])
        ],
        "delta": [f"{m:.3g} / {x:.3g}" for m, x in zip(table["mean_abs_delta"], table["max_abs_delta"])],
    }


def gate_resolution(gates: pd.DataFrame, min_agreement: float) -> tuple[int, float, int]:
    """What the gates' sample can show: the fewest pairs a gate scored, the lower bound of full
    agreement over them, and how many pairs without a flip would show `min_agreement`."""
    pairs = int(gates["pairs"].min())
    return pairs, agreement_interval(pairs, pairs)[0], pairs_to_show(min_agreement)


def _resolution_sentence(gates: pd.DataFrame, min_agreement: float) -> str:
    pairs, lo, needed = gate_resolution(gates, min_agreement)
    return (
        f" With {pairs} pairs, even full agreement bounds the share from below at only {100 * lo:.1f}\\%;"
        f" {needed} pairs without a flip would show {100 * min_agreement:g}\\%."
    )


def fidelity_latex(fidelity: pd.DataFrame, min_agreement: float) -> str:
    gated_sets = sorted(set(fidelity["set"]) - {POOLED_SET})
    pooled = (fidelity["set"] == POOLED_SET).any()
    if pooled:  # each set's own gate stays in the CSV; the paper shows the timed set and the pool
        fidelity = fidelity[fidelity["headline"] | (fidelity["set"] == POOLED_SET)]
    shown = fidelity.assign(
        **_gate_cells(fidelity),
        **{
            against: [
                _speedup(*values)
                for values in zip(
                    fidelity[f"speedup_vs_{against}_fp32"],
                    fidelity[f"conservative_vs_{against}_fp32"],
                    fidelity[f"verdict_vs_{against}_fp32"],
                )
            ]
            for against in ("own", "ort")
        },
    )
    columns = {
        "model": "Model",
        "step": "Variant",
        **({"set": "Set"} if fidelity["set"].nunique() > 1 else {}),
        "pairs": "Pairs",
        "agreement": "Preference agrees",
        "delta": "Score change, mean / max",
        "gate": "Gate",
        "own": "p50 vs own fp32 (cons.)",
        "ort": "p50 vs fp32 ORT (cons.)",
    }
    caption = (
        "Reduced precision behind the fidelity gate: over every (chosen, rejected) pair of the set, the "
        "share whose preference agrees with fp32 ONNX Runtime [95\\% Clopper-Pearson interval over the "
        "pairs], and the change of the scores; a variant "
        f"below {100 * min_agreement:g}\\% agreement is marked failed, whatever its speed. Speed-ups are "
        "per-row p50 ratios (conservative bound in parentheses) with the verdict of non-overlapping intervals"
        " (none where a set is gated, not timed)."
        + _resolution_sentence(fidelity, min_agreement)
        + (
            f" Pooled: the distinct pairs of {', '.join(gated_sets)} together, the gate's largest sample"
            " (each set's own gate is in fidelity.csv)."
            if pooled
            else ""
        )
    ) + hosts_sentence(fidelity, "Gates and launches ran on")
    return simple_latex(shown, columns, caption, "tab:fidelity")


def sweep_table(reports: list[dict], timed: list[dict]) -> pd.DataFrame:
    """One row per model and int8 setting of the quantization sweep: the fidelity gate's numbers,
    how many MatMuls the setting quantized, and whether it is one the decomposition study times
    (rmbench.precision.timed_settings)."""
    rows = [
        {"model": r["model"], **r["settings"]}
        | {k: r[k] for k in ("quantized_matmuls", "pairs", "preference_agreement", "flipped")}
        | {k: r[k] for k in ("mean_abs_delta", "max_abs_delta", "fp32_median_margin", "min_agreement")}
        | {"gate": "passed" if r["passed"] else "failed", "timed": r["settings"] in timed}
        | {"host": host_label(r.get("provenance") or {})}
        for r in reports
    ]
    table = with_agreement_interval(pd.DataFrame(rows))
    return table.sort_values(["model", "preference_agreement"], ascending=[True, False])


def sweep_latex(sweep: pd.DataFrame, min_agreement: float) -> str:
    setting_keys = [k for k in ("weight_type", "per_channel", "reduce_range", "matmuls") if k in sweep]
    shown = sweep.assign(
        setting=[
            ", ".join(f"{k}={str(v).lower()}" for k, v in zip(setting_keys, values))
            + (" (timed)" if timed else "")
            for *values, timed in sweep[[*setting_keys, "timed"]].itertuples(index=False)
        ],
        **_gate_cells(sweep),
    )
    columns = {
        "model": "Model",
        "setting": "int8 setting",
        "quantized_matmuls": "MatMuls in int8",
        "pairs": "Pairs",
        "agreement": "Preference agrees",
        "delta": "Score change, mean / max",
        "gate": "Gate",
    }
    caption = (
        "Which int8 settings keep fp32's preferences: ONNX Runtime's dynamic quantization with each "
        "weight type, per-channel and reduced-range option, of every MatMul with a constant weight or "
        "only the feed-forward or attention ones, through the fidelity gate against fp32 ONNX Runtime "
        f"(below {100 * min_agreement:g}\\% agreement: failed; 95\\% Clopper-Pearson interval of the "
        "agreement over the pairs). Not timed here; the decomposition study times the settings marked (timed)."
        + _resolution_sentence(sweep, min_agreement)
    ) + hosts_sentence(sweep, "Gates ran on")
    return simple_latex(shown, columns, caption, "tab:int8-sweep")
