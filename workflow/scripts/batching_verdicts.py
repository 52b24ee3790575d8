"""The batching verdicts as a machine-readable list: each strategy and size against batch size 1,
with the ratio that padding alone would predict."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged, read_table
from rmbench.report.tables import verdict_list, with_padding_bound

with logged(snakemake.log[0]):
    comparisons = read_table(snakemake.input.comparisons)
    verdicts = verdict_list(comparisons, snakemake.params.baseline, "row_ms")
    table = with_padding_bound(verdicts, read_table(snakemake.input.summary))
    table.to_csv(snakemake.output[0], index=False)
    print("\n".join(table["statement"]))
