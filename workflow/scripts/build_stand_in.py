"""Writes a stand-in for a user's own model folder, read back through `source: local`."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.glue import logged
from rmbench.models import build_stand_in

with logged(snakemake.log[0]):
    build_stand_in(snakemake.params.model, snakemake.output[0], snakemake.input.get("spm"))
