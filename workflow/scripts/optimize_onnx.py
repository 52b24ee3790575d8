"""The export after onnxruntime.transformers' fusions, and the count of each fused operator."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.export.onnx import optimize_for_transformers
from rmbench.plan.glue import logged, write_json

with logged(snakemake.log[0]):
    fused = optimize_for_transformers(snakemake.input.onnx, snakemake.output.onnx, snakemake.input.model)
    write_json(fused, snakemake.output.fused)
    print(f"{snakemake.output.onnx}: fused {fused}")
