"""Exports a model folder to ONNX with dynamic batch and sequence axes."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.export.onnx import export_onnx
from rmbench.plan.glue import logged

with logged(snakemake.log[0]):
    export_onnx(snakemake.input.model, snakemake.output[0], snakemake.params.opset)
