"""The best CPU runtime per model: its speed-up over the baseline and over the runner-up."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.glue import logged, read_table
from rmbench.latex import best_runtime_latex
from rmbench.tables import best_runtime_table

with logged(snakemake.log[0]):
    par = snakemake.params
    summary, comparisons = read_table(snakemake.input.summary), read_table(snakemake.input.comparisons)
    # the looks' verdicts, where the latency study's blocks ran in looks
    sequential = [read_table(path) for path in snakemake.input.sequential]
    table = best_runtime_table(
        summary, comparisons, par.baseline, par.headline_set, sequential=next(iter(sequential), None)
    )
    table.to_csv(snakemake.output.csv, index=False)
    with open(snakemake.output.tex, "w") as f:
        f.write(best_runtime_latex(table, par.baseline, par.headline_set))
