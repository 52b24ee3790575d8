"""Achieved GFLOP/s per runtime against the measured fp32 GEMM ceiling (CSV and LaTeX)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.glue import logged, read_table
from rmbench.roofline import roofline_table
from rmbench.tables import fmt_ci, fmt_pct, hosts_sentence, simple_latex

with logged(snakemake.log[0]):
    launches = read_table(snakemake.input.launches)
    gemm = read_table(snakemake.input.gemm)
    table = roofline_table(launches, gemm, snakemake.params.headline_set)
    table.to_csv(snakemake.output.csv, index=False)
    shown = table.assign(
        achieved=[fmt_ci(r.achieved_gflops, r.achieved_lo, r.achieved_hi) for r in table.itertuples()],
        ceiling=[f"{r.ceiling_gflops:.1f} ({r.ceiling_library})" for r in table.itertuples()],
        fraction=[fmt_pct(f) for f in table["fraction_of_ceiling"]],
        in_launch=[
            fmt_pct(r.fraction_in_launch, r.fraction_in_launch_lo, r.fraction_in_launch_hi)
            for r in table.itertuples()
        ],
    )
    columns = {
        "model": "Model",
        "runtime": "Runtime",
        "launches": "Launches",
        "achieved": "Achieved GFLOP/s [95% CI]",
        "ceiling": "GEMM ceiling GFLOP/s",
        "fraction": "Of ceiling",
        "in_launch": "Of ceiling probed in each launch [95% CI]",
    }
    caption = (
        "Achieved model GFLOP/s per runtime on the CPU (encoder matmul FLOPs of every row over the "
        "measured time, tokenization included) against the best library's fp32 GEMM rate on one encoder "
        "layer's matmuls at the same thread count in the gemm study, and against the ceiling probed in each "
        "launch right after its timed region (the faster of ONNX Runtime/MLAS and numpy at the launch's "
        "median row length): mean of the per-launch fractions with its 95\\% t-interval."
    ) + hosts_sentence(table)
    with open(snakemake.output.tex, "w") as f:
        f.write(simple_latex(shown, columns, caption, "tab:roofline"))
