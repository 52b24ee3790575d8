"""Executes the analysis notebook with papermill (the kernel is this script's Python)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
import papermill
from rmbench.plan.glue import logged

with logged(snakemake.log[0]):
    papermill.execute_notebook(
        snakemake.input.notebook,
        snakemake.output.notebook,
        parameters=snakemake.params.parameters,
        kernel_name="python3",
        cwd=".",
        progress_bar=False,
        log_output=True,
    )
