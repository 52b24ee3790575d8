"""The replication table: every headline verdict checked on the other sets and models."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.glue import logged, read_table
from rmbench.replication import replication_table
from rmbench.tables import hosts_sentence, simple_latex

COLUMNS = {
    "model": "Model",
    "device": "Device",
    "metric": "Metric",
    "candidate": "Runtime",
    "baseline": "vs",
    "verdict": "Verdict",
    "launches": "Launches",
    "reproduced": "Reproduced",
    "disagreeing": "Disagreeing",
}

with logged(snakemake.log[0]):
    comparisons = read_table(snakemake.input[0])
    table = replication_table(comparisons, snakemake.params.headline_set)
    table.to_csv(snakemake.output.csv, index=False)
    shown = table[table["baseline"] == snakemake.params.baseline]
    caption = (
        f"Replication of the latency verdicts against {snakemake.params.baseline} on "
        f"{snakemake.params.headline_set}: the same comparison on every replication set and on the other "
        "model. A verdict that flips there is marked as not reproduced, never dropped; the CSV lists "
        "every pair of runtimes and each replication's verdict and launch counts, and the hosts behind "
        "each check (across_hosts where they differ)."
    )
    with open(snakemake.output.tex, "w") as f:
        caption = caption.replace("_", "\\_") + hosts_sentence(shown)
        f.write(simple_latex(shown, COLUMNS, caption, "tab:replication"))
