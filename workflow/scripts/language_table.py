"""The language-isolation table: native C++ vs ONNX Runtime from Python, same library and ONNX file."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged, read_json, read_table
from rmbench.report.latex import language_caption, language_latex
from rmbench.report.tables import language_table, row_differences

with logged(snakemake.log[0]):
    differences = row_differences([read_json(path) for path in snakemake.input.launches])
    table = language_table(read_table(snakemake.input.comparisons), differences)
    table.to_csv(snakemake.output.csv, index=False)
    with open(snakemake.output.tex, "w") as f:
        f.write(language_latex(table, language_caption(snakemake.params.margin)))
