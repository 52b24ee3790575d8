"""A study's figure from its table (PDF and PNG): rmbench.report.figures.FIGURES names the function."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged, read_table
from rmbench.report.figures import FIGURES

with logged(snakemake.log[0]):
    table = read_table(snakemake.input[0])
    FIGURES[snakemake.wildcards.figure](table, snakemake.params.set, snakemake.output.pdf)
