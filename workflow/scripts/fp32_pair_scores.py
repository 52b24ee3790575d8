"""fp32 ONNX Runtime's scores of every chosen and rejected reply of one set, each row alone: what
every fidelity gate of that model and set compares its variant with (rmbench.export.precision)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.export.precision import loaded, pair_scores
from rmbench.models.data import load_set
from rmbench.plan.glue import logged, write_json
from rmbench.runtimes import runtime_class

with logged(snakemake.log[0]):
    inp, par = snakemake.input, snakemake.params
    fp32 = runtime_class("ort_python")(
        model_dir=inp.model, onnx_path=inp.onnx, device="cpu", threads=par.threads, max_length=par.max_length
    )
    scores = loaded(fp32, lambda runtime: pair_scores(runtime, load_set(inp.rows)))
    write_json(scores | {"threads": par.threads, "onnx": inp.onnx}, snakemake.output[0])
    print(f"{snakemake.wildcards.model} {snakemake.wildcards.set}: {len(scores['ids'])} pairs scored in fp32")
