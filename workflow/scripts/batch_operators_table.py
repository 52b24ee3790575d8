"""Which operators keep a CPU batch no faster per row than its rows alone (ORT's profile per model
and export), or make it faster (PyTorch's per model and runtime): each row alone and batched."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged, read_json
from rmbench.probes.operators import batch_operator_table
from rmbench.report.latex import batch_operator_latex
from rmbench.report.tables import with_record_hosts

with logged(snakemake.log[0]):
    by = snakemake.params.by  # optimizer (ORT's exports) or runtime (PyTorch's runtimes)
    records = [read_json(path) for path in snakemake.input]
    profiles = {
        (found["model"], found[by]): {int(b): p for b, p in found["profiles"].items()} for found in records
    }
    table = with_record_hosts(batch_operator_table(profiles, by), records)
    table.to_csv(snakemake.output.csv, index=False)
    with open(snakemake.output.tex, "w") as f:
        f.write(batch_operator_latex(table, by=by))
    for total in table[table["op_type"] == "total"].itertuples():
        print(
            f"{total.model} ({getattr(total, by)}): {total.ms_per_row_alone:.2f} ms per row alone, "
            f"{total.ms_per_row_batched:.2f} in batches of {total.batch} ({total.ratio:.2f}x)"
        )
