"""The int8 copy of an exported model (dynamic quantization of its MatMul weights)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.export.precision import quantize_int8
from rmbench.plan.glue import logged

with logged(snakemake.log[0]):
    quantize_int8(
        snakemake.input[0],
        snakemake.output[0],
        **snakemake.params.quantization,
        matmul_parts=snakemake.params.matmul_parts,
    )
    print(f"{snakemake.output[0]}: {snakemake.params.quantization}")
