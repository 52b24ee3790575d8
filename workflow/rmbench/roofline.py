"""Achieved FLOP/s of each runtime against the machine's measured fp32 GEMM ceiling.

The ceiling is the best library's rate in the gemm study (one encoder layer's matmuls at the
same thread count); a runtime's achieved rate is model FLOPs over measured time per launch
(rmbench.flops), so the fraction says how close the whole pipeline, tokenization included, runs
to what the matmul kernels alone could do.
"""

from __future__ import annotations

import pandas as pd

from .stats import t_interval


def ceilings(gemm_summary: pd.DataFrame) -> dict[str, tuple[str, float]]:
    """Per model: the library with the best measured GEMM rate, and that rate (GFLOP/s)."""
    found = gemm_summary[gemm_summary["launches_ok"] > 0]
    best = found.loc[found.groupby("model")["gflops"].idxmax()]
    return {r.model: (r.runtime, float(r.gflops)) for r in best.itertuples()}


def roofline_table(
    latency_launches: pd.DataFrame, gemm_summary: pd.DataFrame, headline_set: str
) -> pd.DataFrame:
    ok = latency_launches[
        (latency_launches["status"] == "ok")
        & (latency_launches["set"] == headline_set)
        & (latency_launches["device"] == "cpu")
    ]
    best = ceilings(gemm_summary)
    rows = []
    for (model, runtime), group in ok.groupby(["model", "runtime"], sort=True):
        if model not in best:
            continue
        library, ceiling = best[model]
        achieved = t_interval(group["gflops"].to_numpy())
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
            }
        )
    return pd.DataFrame(rows)
