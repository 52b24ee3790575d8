"""The batching verdicts as a machine-readable list: each strategy and size against batch size 1."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.glue import logged, read_table
from rmbench.tables import verdict_list

with logged(snakemake.log[0]):
    comparisons = read_table(snakemake.input[0])
    table = verdict_list(comparisons, snakemake.params.baseline, "row_ms")
    table.to_csv(snakemake.output[0], index=False)
    print("\n".join(table["statement"]))
