"""Achieved FLOP/s of each runtime against the machine's measured fp32 GEMM ceiling.

The ceiling is the best library's rate in the gemm study (one encoder layer's matmuls at the
same thread count); a runtime's achieved rate is model FLOPs over measured time per launch
(rmbench.probes.flops), so the fraction says how close the whole pipeline, tokenization included, runs
to what the matmul kernels alone could do. Studies with `ceiling_probe` also measure the ceiling
inside every launch, before the engine loads and after its timed region, the higher counting
(rmbench.probes.gemm.probe_ceiling, best_probe): on a shared machine whose speed drifts over the
hours, only that per-launch fraction compares numbers measured at the same time, so it gets the
interval.

- roofline_table: every runtime's achieved rate against both ceilings (extended tier).
- ceiling_profile / ceiling_gap_table: where the rest of the ceiling goes, per model, from ONNX
  Runtime's operator profile of the export the engines load (the `ceiling_gap` table).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rmbench.export.onnx_files import ATTENTION_EXPORTS
from rmbench.models.build import folder_row_limit
from rmbench.probes.flops import encoder_flops, model_config
from rmbench.probes.gemm import best_probe, probe_ceiling
from rmbench.probes.operators import MATRIX_OPS, operator_profile
from rmbench.probes.provenance import host_cell, launch_hosts
from rmbench.stats.across_launches import t_interval


def row_gemm_cells(gemm_summary: pd.DataFrame) -> pd.DataFrame:
    """The gemm study's cells at the study's row length: not its variants (other row counts, a
    batch's m = tokens x b), which ask at which m a library reaches its rate."""
    return gemm_summary[gemm_summary["variant"] == "-"] if "variant" in gemm_summary else gemm_summary


def ceilings(gemm_summary: pd.DataFrame) -> dict[str, tuple[str, float]]:
    """Per model: the library with the best measured GEMM rate at a row's shapes, and that rate
    (GFLOP/s)."""
    found = row_gemm_cells(gemm_summary)
    found = found[found["launches_ok"] > 0]
    best = found.loc[found.groupby("model")["gflops"].idxmax()]
    return {r.model: (r.runtime, float(r.gflops)) for r in best.itertuples()}


IN_LAUNCH_COLUMNS = [
    "probe_launches",
    "fraction_in_launch",
    "fraction_in_launch_lo",
    "fraction_in_launch_hi",
    "probed_ceiling_gflops",
    "probed_tokens",
]


def in_launch_fractions(launches: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group of `by`: the ok launches' achieved FLOP/s as a fraction of the ceiling probed in
    the same launch (mean and 95% t-interval, at least 0), the probed ceiling's mean and the median
    length it was probed at; no rows where no launch probed."""
    if "fraction_of_ceiling" not in launches:
        return pd.DataFrame(columns=[*by, *IN_LAUNCH_COLUMNS])
    probed = launches[(launches["status"] == "ok") & launches["fraction_of_ceiling"].notna()]
    rows = []
    for key, group in probed.groupby(by, sort=True):
        fraction = t_interval(group["fraction_of_ceiling"].to_numpy())
        # With few launches the t-interval can reach below 0, which a share cannot (NaN stays NaN).
        values = [fraction.n, fraction.mean, max(fraction.lo, 0.0), fraction.hi]
        values += [group["ceiling_gflops"].mean(), group["ceiling_tokens"].median()]
        rows.append(dict(zip(by, key)) | dict(zip(IN_LAUNCH_COLUMNS, values)))
    return pd.DataFrame(rows, columns=[*by, *IN_LAUNCH_COLUMNS])


def roofline_table(
    latency_launches: pd.DataFrame, gemm_summary: pd.DataFrame, headline_set: str
) -> pd.DataFrame:
    ok = latency_launches[
        (latency_launches["status"] == "ok")
        & (latency_launches["set"] == headline_set)
        & (latency_launches["device"] == "cpu")
    ]
    best, row_cells = ceilings(gemm_summary), row_gemm_cells(gemm_summary)
    rows = []
    for (model, runtime), group in ok.groupby(["model", "runtime"], sort=True):
        if model not in best:
            continue
        library, ceiling = best[model]
        achieved = t_interval(group["gflops"].to_numpy())
        ceiling_cell = row_cells[(row_cells["model"] == model) & (row_cells["runtime"] == library)]
        rows.append(
            {
                "model": model,
                "runtime": runtime,
                "launches": achieved.n,
                "achieved_gflops": achieved.mean,
                "achieved_lo": achieved.lo,
                "achieved_hi": achieved.hi,
                "ceiling_library": library,
                "ceiling_gflops": ceiling,
                "fraction_of_ceiling": achieved.mean / ceiling,
                "threads": int(group["threads"].iloc[0]),
                # the runtime's launches and the gemm cell its ceiling comes from
                "host": host_cell([*launch_hosts(group), *launch_hosts(ceiling_cell)]),
            }
        )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    return table.merge(in_launch_fractions(ok, ["model", "runtime"]), on=["model", "runtime"], how="left")


def ceiling_profile(
    onnx_path,
    model_dir,
    rows: list[dict],
    model: str,
    threads: int,
    warmup: int,
    max_length: int,
    operators=None,
) -> dict:
    """ONNX Runtime's operator profile of `rows` scored as a launch scores them (the first
    `warmup` rows untimed, then every row alone), the FLOP model's work per row, and the GEMM
    ceiling probed in the same process before and after at the rows' median length. The ceiling
    is the higher probe (gemm_bench.best_probe; after a dip the matrix products would seem to
    beat it). `operators`: the native engine's operator library, for exports that call it."""
    limit = folder_row_limit(model_dir, max_length)  # a chat row's limit is its model's context
    lengths = [min(row[f"tokens_{model}"], limit) for row in rows]
    tokens = int(np.median(lengths))
    pairs = [(r["prompt"], r["response"]) for r in rows[:warmup] + rows]
    before = probe_ceiling(model_dir, tokens, threads)
    profile = operator_profile(onnx_path, model_dir, pairs, threads, warmup, max_length, operators=operators)
    after = probe_ceiling(model_dir, tokens, threads)
    config = model_config(model_dir)
    return {
        "model": model,
        "onnx": str(onnx_path),
        "tokens": tokens,
        "gflop_per_row": sum(encoder_flops(config, n) for n in lengths) / len(lengths) / 1e9,
        # only relative attention exports differently (loaded_graph)
        "relative_attention": bool(config.get("relative_attention")),
        "profile": profile,
        "ceiling": best_probe([before, after]),
    }


def reached_share(record: dict) -> float:
    """The share of the ceiling a ceiling_profile record reached, profiler on."""
    achieved = record["gflop_per_row"] / record["profile"]["call_ms_per_row"] * 1e3
    return achieved / record["ceiling"]["ceiling_gflops"]


# The ceiling-gap table's parts that are not an operator type
AT_CEILING = "the model's FLOPs at the ceiling"
MATRIX_BELOW = "matrix products below the ceiling's rate"
OUTSIDE_KERNELS = "outside the kernels (tokenizing and session)"


def matrix_ms(profile: dict) -> float:
    """An operator profile's time per row in matrix products (what the GEMM ceiling bounds)."""
    return sum(o["ms_per_row"] for o in profile["operators"] if o["op_type"] in MATRIX_OPS)


def ceiling_gap_parts(record: dict, top: int) -> list[dict]:
    """One model's time per row (ms, its operator profile's whole call) split into parts that add
    up to it: the model's FLOPs at the probed ceiling (the share of the ceiling reached), the rest
    of the matrix products' time, each of the `top` slowest other operator types, the other
    operators together, and what ran outside the kernels."""
    profile, ceiling = record["profile"], record["ceiling"]["ceiling_gflops"]
    ops = profile["operators"]
    rest = [o for o in ops if o["op_type"] not in MATRIX_OPS]  # most time first
    at_ceiling = record["gflop_per_row"] / ceiling * 1e3
    parts = [(AT_CEILING, at_ceiling), (MATRIX_BELOW, matrix_ms(profile) - at_ceiling)]
    shown = rest[:top] if len(rest) > top + 1 else rest  # one left over is shown by its name
    parts += [(o["op_type"], o["ms_per_row"]) for o in shown]
    if len(rest) > len(shown):
        others = rest[len(shown) :]
        parts.append((f"the other {len(others)} operator types", sum(o["ms_per_row"] for o in others)))
    kernels = sum(o["ms_per_row"] for o in ops)
    parts.append((OUTSIDE_KERNELS, profile["call_ms_per_row"] - kernels))
    whole = profile["call_ms_per_row"]
    return [{"part": part, "ms_per_row": ms, "share": ms / whole} for part, ms in parts]


def loaded_graph(record: dict) -> str:
    """The export a ceiling profile ran, by what its graph is: a model without relative attention
    exports the stock graph under every attention export's name (onnx_files.ATTENTION_EXPORTS)."""
    export = record["optimizer"]
    return "none" if export in ATTENTION_EXPORTS and not record.get("relative_attention", True) else export


def ceiling_gap_table(records: list[dict], best: pd.DataFrame, top: int = 5) -> pd.DataFrame:
    """Per model: where the time of a row goes against the GEMM ceiling, from ONNX Runtime's
    operator profile of the export the latency study's engines load (`records`, rule
    ceiling_operators, the ceiling probed in the same process). The first part's share is what
    the profiled run reached; the parts after it are what held it back. Beside them: the matrix
    products' own rate (the FLOP model's work over their time: at most the ceiling where the model
    counts the right work) and the best CPU runtime's share measured in its launches (`best`: the
    best-runtime table), which runs without the profiler."""
    rows = []
    for record in sorted(records, key=lambda r: r["model"]):
        profile = record["profile"]
        model = {
            "model": record["model"],
            "export": loaded_graph(record),
            "rows": profile["rows"],
            "tokens": record["tokens"],
            "gflop_per_row": record["gflop_per_row"],
            "ceiling_gflops": record["ceiling"]["ceiling_gflops"],
            "matrix_gflops": record["gflop_per_row"] / matrix_ms(profile) * 1e3,
        }
        found = best[(best["model"] == record["model"]) & (best["metric"] == "p50_ms")]
        if not found.empty:
            model |= {
                "best_runtime": found["best"].iloc[0],
                "best_of_ceiling": found["of_ceiling"].iloc[0],
                "best_of_ceiling_lo": found["of_ceiling_lo"].iloc[0],
                "best_of_ceiling_hi": found["of_ceiling_hi"].iloc[0],
            }
        rows += [model | part for part in ceiling_gap_parts(record, top)]
    return pd.DataFrame(rows)
