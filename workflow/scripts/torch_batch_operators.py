"""Why a PyTorch batch can be faster per row: torch.profiler's view of one PyTorch runtime scoring
a model's first rows, each alone and as a batch of copies of itself, taken in turn in one process."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.models.data import load_set
from rmbench.plan.glue import logged, write_json
from rmbench.probes.flops import model_config
from rmbench.probes.provenance import provenance
from rmbench.probes.torch_operators import WEIGHT_GEMM, torch_operator_profiles, weight_gemm_work
from rmbench.runtimes import runtime_class

with logged(snakemake.log[0]):
    par, w = snakemake.params, snakemake.wildcards
    rows = load_set(snakemake.input.rows)
    rows = rows[: par.warmup + par.rows] if par.rows else rows  # the configured first rows
    pairs = [(r["prompt"], r["response"]) for r in rows]
    # The batching study's options, but a cache of its own: a profiled compile is another compile.
    options = par.options | ({"cache": "cold"} if w.runtime == "torch_compile" else {})
    runtime = runtime_class(w.runtime)(
        snakemake.input.model, None, "cpu", par.threads, par.max_length, options
    )
    runtime.load()
    if w.runtime == "torch_compile":
        import torch._inductor.config

        torch._inductor.config.cpp.enable_kernel_profile = True  # Inductor's kernels by name
    print(
        f"profiling {w.runtime} on {w.model}: {len(pairs)} rows ({par.warmup} warm-up), each alone and as "
        f"{par.batch} copies in turn, {par.threads} threads, options {options}"
    )
    profiles = torch_operator_profiles(runtime, pairs, par.warmup, (1, par.batch))
    config = model_config(snakemake.input.model)
    tokens = [min(r[f"tokens_{w.model}"], runtime.max_length) for r in rows[par.warmup :]]
    for batch, profile in profiles.items():
        work = weight_gemm_work(config, tokens, batch)
        profile["work_gflop_per_row"] = {WEIGHT_GEMM: work}  # what the weight products had to do
        print(
            f"batch {batch}: {profile['call_ms_per_row']:.2f} ms per row (whole call), matrix products "
            f"{100 * profile['matrix_share']:.1f}% of operator time, weight products {work:.2f} GFLOP per row"
        )
    runtime.close()
    write_json(
        {"model": w.model, "runtime": w.runtime, "profiles": {str(b): p for b, p in profiles.items()}}
        | {"runtime_description": runtime.describe(), "provenance": provenance(par.repo, "cpu")},
        snakemake.output[0],
    )
