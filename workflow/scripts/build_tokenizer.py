"""Writes a model's tokenizer folder (built offline, or fetched from the hub or a local folder)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.models.build import build_tokenizer, without_torch
from rmbench.plan.glue import logged

with logged(snakemake.log[0]):
    without_torch()  # the tokenizer libraries alone
    build_tokenizer(snakemake.params.model, snakemake.output[0], snakemake.input.get("spm"))
