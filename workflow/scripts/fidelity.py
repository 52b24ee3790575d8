"""The fidelity gate of one reduced-precision variant: its scores of every chosen and rejected
reply against fp32 ONNX Runtime's (rule fp32_pair_scores; rmbench.export.precision)."""

from pathlib import Path

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.export.precision import fidelity_report, loaded
from rmbench.models.data import load_set
from rmbench.plan.cells import parse_params
from rmbench.plan.glue import logged, read_json, write_json
from rmbench.probes.provenance import provenance
from rmbench.runtimes import runtime_class, spare_torch_import

with logged(snakemake.log[0]):
    w, inp, par = snakemake.wildcards, snakemake.input, snakemake.params
    params = parse_params(w.params)
    options = par.options | {k: v for k, v in params.items() if k != "set"}
    options |= {"binary": inp.get("binary"), "cache_root": str(Path(par.repo, "results/inductor-cache"))}
    spare_torch_import(w.runtime, "cpu", options)
    common = {"model_dir": inp.model, "device": "cpu", "threads": par.threads, "max_length": par.max_length}
    variant = runtime_class(w.runtime)(onnx_path=inp.get("onnx"), options=options, **common)
    fp32, rows, gate = read_json(inp.fp32_scores), load_set(inp.rows), par.min_agreement
    report = loaded(variant, lambda runtime: fidelity_report(runtime, fp32, rows, gate))
    report |= {"model": w.model, "runtime": w.runtime, "params": w.params, "threads": par.threads}
    report["provenance"] = provenance(par.repo, "cpu")  # int8 kernels differ by instruction set
    write_json(report, snakemake.output[0])
    verdict = (
        "passed" if report["passed"] else "FAILED (the tables mark it; launches on a timed set still run)"
    )
    print(
        f"{w.model} {w.runtime} {w.params}: preference agreement {report['preference_agreement']:.3f} "
        f"(gate {report['min_agreement']}), max |delta| {report['max_abs_delta']:.3g}: {verdict}"
    )
