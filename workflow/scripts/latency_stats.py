"""Latency statistics: per-cell CIs over launches, and every runtime pair compared."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
import pandas as pd
from rmbench.glue import logged
from rmbench.stats import compare_latency, summarize

KEYS = ["model", "device", "set"]

with logged(snakemake.log[0]):
    launches = pd.read_csv(snakemake.input[0], keep_default_na=False, na_values=[""])
    summarize(launches, KEYS + ["runtime"], ["p50_ms", "p95_ms"]).to_csv(
        snakemake.output.summary, index=False
    )
    comparisons = pd.concat(
        [compare_latency(launches, KEYS, "runtime", m) for m in ("p50_ms", "p95_ms")], ignore_index=True
    )
    comparisons.to_csv(snakemake.output.comparisons, index=False)
