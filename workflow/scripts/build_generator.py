"""Writes the co-location study's generator folder: config, safetensors weights, tokenizer files."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.models.generator import build_generator
from rmbench.plan.glue import logged

with logged(snakemake.log[0]):
    build_generator(snakemake.params.generator, snakemake.input.tokenizer, snakemake.output[0])
