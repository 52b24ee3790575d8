"""Whether a CPU batch uses ONNX Runtime's threads better than a row alone, per model and setting."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged, read_json
from rmbench.probes.thread_probe import thread_table
from rmbench.report.latex import thread_latex
from rmbench.report.tables import with_record_hosts

with logged(snakemake.log[0]):
    records = [read_json(path) for path in snakemake.input]
    table = with_record_hosts(thread_table({found["model"]: found["results"] for found in records}), records)
    table.to_csv(snakemake.output.csv, index=False)
    with open(snakemake.output.tex, "w") as f:
        f.write(thread_latex(table))
    for r in table.itertuples():
        print(
            f"{r.model} {r.setting}: batched/alone {r.batched_vs_alone:.2f}, alone vs first {r.alone_vs_reference:.2f}"
        )
