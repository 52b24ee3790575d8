"""The replication table: every headline verdict checked on the other sets and models."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged, read_table
from rmbench.report.latex import replication_latex
from rmbench.stats.replication import replication_table

with logged(snakemake.log[0]):
    par = snakemake.params
    table = replication_table(read_table(snakemake.input[0]), par.headline_set)
    table.to_csv(snakemake.output.csv, index=False)
    with open(snakemake.output.tex, "w") as f:
        f.write(replication_latex(table, par.baseline, par.headline_set))
