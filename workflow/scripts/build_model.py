"""Writes a model folder: config, safetensors weights, tokenizer files."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.models.build import build_model
from rmbench.plan.glue import logged

with logged(snakemake.log[0]):
    build_model(snakemake.params.model, snakemake.input.tokenizer, snakemake.output[0])
