"""Whether a CPU batch uses ONNX Runtime's threads better than a row alone: one model's rows alone
and batched, on one session per thread setting, in turn in one process."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.models.build import without_torch
from rmbench.models.data import load_set
from rmbench.plan.glue import logged, write_json
from rmbench.probes.provenance import provenance
from rmbench.probes.thread_probe import setting_name, thread_probe

with logged(snakemake.log[0]):
    without_torch()  # ONNX Runtime alone
    par, model = snakemake.params, snakemake.wildcards.model
    probe = par.probe
    rows = load_set(snakemake.input.rows)
    rows = rows[: par.warmup + probe["rows"]] if probe.get("rows") else rows  # the configured first rows
    pairs = [(r["prompt"], r["response"]) for r in rows]
    names = ", ".join(setting_name(s) for s in probe["settings"])
    print(
        f"{model} ({snakemake.input.onnx}): {len(pairs)} rows ({par.warmup} warm-up), each alone and as "
        f"{probe['batch']} copies, on {names} in turn (intra_all: {par.threads} intra-op threads)"
    )
    results = thread_probe(
        snakemake.input.onnx,
        snakemake.input.model,
        pairs,
        probe["settings"],
        par.threads,
        probe["batch"],
        par.warmup,
        par.max_length,
    )
    for r in results:
        print(
            f"{r['name']}: {r['alone_ms_per_row']:.2f} ms per row alone, {r['batched_ms_per_row']:.2f} batched"
        )
    write_json(
        {"model": model, "results": results, "provenance": provenance(par.repo, "cpu")}, snakemake.output[0]
    )
