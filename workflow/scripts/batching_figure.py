"""Throughput against batch size per strategy (PDF and PNG)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
import pandas as pd
from rmbench.figures import batching_figure
from rmbench.glue import logged

with logged(snakemake.log[0]):
    table = pd.read_csv(snakemake.input[0], keep_default_na=False, na_values=[""])
    batching_figure(table, snakemake.params.set, snakemake.output.pdf)
