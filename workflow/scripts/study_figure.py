"""A study's figure from its table (PDF and PNG): rmbench.figures.FIGURES names the function."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.figures import FIGURES
from rmbench.glue import logged, read_table

with logged(snakemake.log[0]):
    table = read_table(snakemake.input[0])
    FIGURES[snakemake.wildcards.figure](table, snakemake.params.set, snakemake.output.pdf)
