"""The run's verdicts in words (paper/tables/findings.md), from the paper's tables."""

from pathlib import Path

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged, read_table
from rmbench.report.findings import findings_markdown

with logged(snakemake.log[0]):
    tables = {Path(path).stem: read_table(path) for path in snakemake.input}
    par = snakemake.params
    text = findings_markdown(tables, par.headline_sets, par.baselines, par.tier)
    Path(snakemake.output[0]).write_text(text)
    print(text)
