"""Which operators keep a CPU batch no faster per row than its rows alone: ORT's profile of each
row alone and batched, per model."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.decomposition import batch_operator_latex, batch_operator_table
from rmbench.glue import logged, read_json

with logged(snakemake.log[0]):
    profiles = {}
    for path in snakemake.input:  # every model, alone and batched
        profile = read_json(path)
        profiles.setdefault(profile["model"], {})[profile["batch"]] = profile
    table = batch_operator_table(profiles)
    table.to_csv(snakemake.output.csv, index=False)
    with open(snakemake.output.tex, "w") as f:
        f.write(batch_operator_latex(table))
    for model, rows in table[table["op_type"] == "total"].groupby("model"):
        total = rows.iloc[0]
        print(
            f"{model}: {total.ms_per_row_alone:.2f} ms per row alone, {total.ms_per_row_batched:.2f} in batches "
            f"of {total.batch} ({total.ratio:.2f}x)"
        )
