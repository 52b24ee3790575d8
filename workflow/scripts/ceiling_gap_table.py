"""Where each model's time goes against the GEMM ceiling (CSV and LaTeX)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged, read_json, read_table
from rmbench.probes.roofline import ceiling_gap_table
from rmbench.report.latex import ceiling_gap_latex
from rmbench.report.tables import with_record_hosts

with logged(snakemake.log[0]):
    records = [read_json(path) for path in snakemake.input.profiles]
    table = with_record_hosts(ceiling_gap_table(records, read_table(snakemake.input.best)), records)
    table.to_csv(snakemake.output.csv, index=False)
    with open(snakemake.output.tex, "w") as f:
        f.write(ceiling_gap_latex(table))
