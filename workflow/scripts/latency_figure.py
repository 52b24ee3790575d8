"""The latency figure: mean and 95% CI of per-launch p50/p95 per runtime."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
import pandas as pd
from rmbench.figures import latency_figure
from rmbench.glue import logged

with logged(snakemake.log[0]):
    latency_figure(pd.read_csv(snakemake.input[0]), snakemake.params.set, snakemake.output.pdf)
