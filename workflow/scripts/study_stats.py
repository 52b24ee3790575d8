"""A study's statistics: per-cell CIs over launches, and every pair of cells compared."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
import pandas as pd
from rmbench.plan.glue import logged, read_table
from rmbench.plan.studies import STUDIES
from rmbench.report.tables import compared_metrics, group_keys
from rmbench.stats.across_launches import Checks, compare_latency, summarize

with logged(snakemake.log[0]):
    study = snakemake.wildcards.study
    layout, keys = STUDIES[study], group_keys(study)
    launches = read_table(snakemake.input[0])
    launches["reason"] = launches["reason"].astype(object).fillna("")  # all-empty reads as float NaN
    checks = Checks(**snakemake.params.checks)
    summary = summarize(launches, [*keys, layout["between"]], layout["metrics"], checks)
    summary.to_csv(snakemake.output.summary, index=False)
    comparisons = pd.concat(
        [compare_latency(launches, keys, layout["between"], m, checks) for m in compared_metrics(study)],
        ignore_index=True,
    )
    comparisons.to_csv(snakemake.output.comparisons, index=False)
