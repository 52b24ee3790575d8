"""The numbers the paper quotes, as LaTeX definitions (\\rmnum{study/model/device/...}), and in
the log the quoted ones this run has no value for."""

from pathlib import Path

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged, read_table
from rmbench.report.paper import numbers_tex, paper_numbers, printed_text, quoted_keys, unmeasured_report

with logged(snakemake.log[0]):
    tables = {Path(path).stem: read_table(path) for path in snakemake.input.tables}
    numbers = paper_numbers(tables, snakemake.params.headline_sets) | {"tier": snakemake.params.tier}
    Path(snakemake.output[0]).write_text(numbers_tex(numbers, snakemake.params.tier))
    print(f"{len(numbers)} numbers from {len(tables)} tables")
    quoted = quoted_keys(printed_text(snakemake.input.text, snakemake.params.tier))
    print(unmeasured_report(quoted, numbers))
