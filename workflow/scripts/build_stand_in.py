"""Writes a stand-in for a user's own model folder, read back through `source: local`."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.models.build import build_stand_in
from rmbench.plan.glue import logged

with logged(snakemake.log[0]):
    build_stand_in(snakemake.params.model, snakemake.output[0], snakemake.input.get("spm"))
