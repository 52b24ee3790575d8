"""Builds a study's tidy table: one row per launch, any status."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged
from rmbench.report.tables import launch_table

with logged(snakemake.log[0]):
    table = launch_table(snakemake.input)
    table.to_csv(snakemake.output[0], index=False)
    print(table["status"].value_counts().to_string())
