"""The quantization sweep's table: every int8 setting's fidelity gate, per model."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged, read_json
from rmbench.report.latex import sweep_latex
from rmbench.studies.decomposition import sweep_table

with logged(snakemake.log[0]):
    par = snakemake.params
    sweep = sweep_table([read_json(p) for p in snakemake.input], par.timed)
    sweep.to_csv(snakemake.output.csv, index=False)
    with open(snakemake.output.tex, "w") as f:
        f.write(sweep_latex(sweep, par.min_agreement))
    for model, rows in sweep.groupby("model"):
        print(f"{model}: {rows['gate'].eq('passed').sum()} of {len(rows)} int8 settings pass the gate")
