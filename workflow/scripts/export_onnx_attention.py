"""Exports a model folder to ONNX with DeBERTa's relative attention written another way
(params.attention: rmbench.export.onnx_files.ATTENTION_EXPORTS). Its own script, so that the stock
export's rule and everything measured on it stay as they are."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.export.onnx import export_onnx
from rmbench.plan.glue import logged

with logged(snakemake.log[0]):
    export_onnx(
        snakemake.input.model, snakemake.output[0], snakemake.params.opset, snakemake.params.attention
    )
