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

import math
import re

import pandas as pd

from rmbench.export.onnx import GRAPH_LEVELS
from rmbench.export.precision import POOLED_SET, gate_verdict, preference_fidelity
from rmbench.plan.cells import format_params, parse_params, step_name
from rmbench.probes.provenance import cell_hosts, host_cell, host_label
from rmbench.stats.across_launches import agreement_interval

# What each ONNX Runtime graph level adds to the one before (config steps are
# "ort_python graph=<level>"; ORT-Python without a graph key runs at "all").
ORT_LEVEL_ADDS = {
    "disabled": "kernels and runtime (eager -> ORT, no graph optimization)",
    "basic": "constant folding, redundant nodes",
    "extended": "fusions (attention, GELU, layer norm)",
    "all": "layout transformations",
}
ORT_FP32 = "ort_python graph=all"


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
    oneDNN's kernels, to torch.compile and freezing, from ORT to the relative-shift export and on to
    the native engine's operator for its shift): p50
    with its CI, the milliseconds it saves against the step before, that as a share of the whole
    eager -> ORT gap (ORT path), achieved GFLOP/s and the fraction of the gemm study's ceiling,
    and (`in_launch`, rmbench.probes.roofline.in_launch_fractions by model and step) the fraction of the
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
            (
                with_param(ORT_FP32, "optimizer", "disentangled_bias"),
                "the shift and sum as the engine's operator",
            ),
            (
                with_param(ORT_FP32, "optimizer", "multihead_attention"),
                "the rest of the attention as one ORT operator",
            ),
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


def sweep_table(reports: list[dict], timed: list[dict]) -> pd.DataFrame:
    """One row per model and int8 setting of the quantization sweep: the fidelity gate's numbers,
    how many MatMuls the setting quantized, and whether it is one the decomposition study times
    (rmbench.export.precision.timed_settings)."""
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
