"""A study's sequential blocks at their last look: one row per comparison."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged
from rmbench.stats.sequential import decisions_table

with logged(snakemake.log[0]):
    table = decisions_table(snakemake.input)
    table.to_csv(snakemake.output[0], index=False)
    print(table["decision"].value_counts().to_string() if len(table) else "no sequential block")
