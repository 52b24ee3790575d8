"""The language-isolation table: native C++ vs ONNX Runtime from Python, same library and ONNX file."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.glue import logged, read_json, read_table
from rmbench.tables import language_latex, language_table, row_differences

with logged(snakemake.log[0]):
    differences = row_differences([read_json(path) for path in snakemake.input.launches])
    table = language_table(read_table(snakemake.input.comparisons), differences)
    table.to_csv(snakemake.output.csv, index=False)
    caption = (
        "Language isolation: the native C++ engine against ONNX Runtime called from Python, on the same "
        "ONNX file and the same libonnxruntime. Means over launches of per-launch p50/p95; the verdict "
        "requires non-overlapping 95\\% intervals. Equivalence (two one-sided tests): the 90\\% Welch "
        f"interval of the difference lies within $\\pm${snakemake.params.margin * 100:g}\\%; where it does not, n "
        "is the launches per side that would show it at the observed means and spread."
    )
    with open(snakemake.output.tex, "w") as f:
        f.write(language_latex(table, caption))
