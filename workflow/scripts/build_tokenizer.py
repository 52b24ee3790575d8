"""Writes a model's tokenizer folder (built offline, or fetched from the hub or a local folder)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.glue import logged
from rmbench.models import build_tokenizer, without_torch

with logged(snakemake.log[0]):
    without_torch()  # the tokenizer libraries alone
    build_tokenizer(snakemake.params.model, snakemake.output[0], snakemake.input.get("spm"))
