"""The paper's main latency table (CSV and LaTeX)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
import pandas as pd
from rmbench.glue import logged
from rmbench.tables import latency_latex, latency_rows

with logged(snakemake.log[0]):
    summary = pd.read_csv(snakemake.input.summary, keep_default_na=False, na_values=[""])
    summary["reasons"] = summary["reasons"].fillna("")
    comparisons = pd.read_csv(snakemake.input.comparisons)
    baseline = snakemake.params.baseline
    table = latency_rows(summary, comparisons, baseline)
    table.to_csv(snakemake.output.csv, index=False)
    sets = ", ".join(sorted(table["set"].unique()))
    caption = (
        f"Per-row latency: mean over launches of each launch's p50 and p95, 95\\% t-interval in "
        f"brackets; each launch a fresh process scoring every row of {sets} alone. Speed-up is "
        f"relative to {baseline.replace('_', ' ')} (point estimate, conservative bound in "
        "parentheses); verdicts require non-overlapping intervals."
    )
    with open(snakemake.output.tex, "w") as f:
        f.write(latency_latex(table, baseline, caption))
