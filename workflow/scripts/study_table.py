"""A study's paper table (CSV and LaTeX) from its statistics."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
import pandas as pd
from rmbench.glue import logged
from rmbench.tables import study_latex, study_table

with logged(snakemake.log[0]):
    study, baseline = snakemake.wildcards.study, snakemake.params.baseline
    summary = pd.read_csv(snakemake.input.summary, keep_default_na=False, na_values=[""])
    summary["reasons"] = summary["reasons"].fillna("")
    comparisons = pd.read_csv(snakemake.input.comparisons, keep_default_na=False, na_values=[""])
    table = study_table(summary, comparisons, study, baseline)
    table.to_csv(snakemake.output.csv, index=False)
    with open(snakemake.output.tex, "w") as f:
        f.write(study_latex(table, study, baseline, snakemake.params.caption, f"tab:{study}"))
