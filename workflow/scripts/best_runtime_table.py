"""The best CPU runtime per model: its speed-up over the baseline and over the runner-up, and its
share of the GEMM ceiling probed in its launches (where they probed it)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged, read_table
from rmbench.probes.roofline import in_launch_fractions
from rmbench.report.latex import best_runtime_latex
from rmbench.report.tables import best_runtime_table

with logged(snakemake.log[0]):
    par = snakemake.params
    summary, comparisons = read_table(snakemake.input.summary), read_table(snakemake.input.comparisons)
    # the looks' verdicts, where the latency study's blocks ran in looks
    sequential = [read_table(path) for path in snakemake.input.sequential]
    launches = read_table(snakemake.input.launches)
    headline_cpu = launches[(launches["set"] == par.headline_set) & (launches["device"] == "cpu")]
    table = best_runtime_table(
        summary,
        comparisons,
        par.baseline,
        par.headline_set,
        sequential=next(iter(sequential), None),
        probed=in_launch_fractions(headline_cpu, ["model", "runtime"]),
    )
    table.to_csv(snakemake.output.csv, index=False)
    with open(snakemake.output.tex, "w") as f:
        f.write(best_runtime_latex(table, par.baseline, par.headline_set))
