"""A study's paper table (CSV and LaTeX) from its statistics."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged, read_table
from rmbench.report.latex import STUDY_CAPTIONS, study_latex
from rmbench.report.tables import study_table

with logged(snakemake.log[0]):
    study, baseline = snakemake.wildcards.study, snakemake.params.baseline
    summary = read_table(snakemake.input.summary)
    summary["reasons"] = summary["reasons"].astype(object).fillna("")  # all-empty reads as float NaN
    comparisons = read_table(snakemake.input.comparisons)
    # the design's verdicts, where the study's blocks ran in looks
    sequential = [read_table(path) for path in snakemake.input.sequential]
    table = study_table(
        summary, comparisons, study, baseline, snakemake.params.headline_set, next(iter(sequential), None)
    )
    table.to_csv(snakemake.output.csv, index=False)
    with open(snakemake.output.tex, "w") as f:
        f.write(study_latex(table, study, baseline, STUDY_CAPTIONS[study], f"tab:{study}"))
