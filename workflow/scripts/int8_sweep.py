"""One int8 setting of the quantization sweep: quantize the export with it (a temporary file) and
put it through the fidelity gate against fp32 ONNX Runtime's scores (rmbench.export.precision)."""

import tempfile
from collections import Counter
from pathlib import Path

import _bootstrap  # noqa: F401  (makes rmbench importable)
import onnx
from rmbench.export.precision import fidelity_report, loaded, quantize_int8
from rmbench.models.data import load_set
from rmbench.plan.glue import logged, read_json, write_json
from rmbench.probes.provenance import provenance
from rmbench.runtimes import runtime_class

INTEGER_MATMULS = ("MatMulInteger", "DynamicQuantizeMatMul", "MatMulIntegerToFloat")

with logged(snakemake.log[0]):
    w, inp, par = snakemake.wildcards, snakemake.input, snakemake.params
    common = {"model_dir": inp.model, "device": "cpu", "threads": par.threads, "max_length": par.max_length}
    # The int8 file lives only as long as its gate: a DeBERTa one is ~600 MB per setting.
    with tempfile.TemporaryDirectory(dir=snakemake.resources.tmpdir) as tmp:
        int8 = Path(tmp, "model.int8.onnx")
        quantize_int8(inp.onnx, int8, **par.settings, matmul_parts=par.matmul_parts)
        ops = Counter(n.op_type for n in onnx.load(str(int8), load_external_data=False).graph.node)
        variant = runtime_class("ort_python")(onnx_path=str(int8), **common)
        fp32, rows = read_json(inp.fp32_scores), load_set(inp.rows)
        report = loaded(variant, lambda runtime: fidelity_report(runtime, fp32, rows, par.min_agreement))
    report |= {
        "model": w.model,
        "settings": par.settings,
        "quantized_matmuls": sum(ops[op] for op in INTEGER_MATMULS),
        "threads": par.threads,
        "provenance": provenance(par.repo, "cpu"),  # int8 kernels differ by instruction set
    }
    write_json(report, snakemake.output[0])
    print(
        f"{w.model} int8 {w.settings}: {report['quantized_matmuls']} MatMuls in int8, preference "
        f"agreement {report['preference_agreement']:.3f} (gate {par.min_agreement}), "
        f"mean |delta| {report['mean_abs_delta']:.3g}: {'passed' if report['passed'] else 'failed'}"
    )
