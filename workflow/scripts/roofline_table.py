"""Achieved GFLOP/s per runtime against the measured fp32 GEMM ceiling (CSV and LaTeX)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged, read_table
from rmbench.probes.roofline import roofline_table
from rmbench.report.latex import roofline_latex

with logged(snakemake.log[0]):
    launches = read_table(snakemake.input.launches)
    table = roofline_table(launches, read_table(snakemake.input.gemm), snakemake.params.headline_set)
    table.to_csv(snakemake.output.csv, index=False)
    with open(snakemake.output.tex, "w") as f:
        f.write(roofline_latex(table))
