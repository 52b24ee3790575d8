"""PyTorch fp32 eager scores of one set: the reference that every launch is checked against."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.export.onnx import reference_scores
from rmbench.models.data import load_set
from rmbench.plan.glue import logged, write_json

with logged(snakemake.log[0]):
    rows = load_set(snakemake.input.rows)
    scores = reference_scores(snakemake.input.model, rows, snakemake.params.threads)
    write_json({"ids": [r["id"] for r in rows], "scores": scores}, snakemake.output[0])
