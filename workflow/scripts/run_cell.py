"""One launch of one cell, in this fresh process; writes its result record."""

import os
import time
from pathlib import Path

import _bootstrap  # noqa: F401  (makes rmbench importable)

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one pair at a time: no Rust thread pool
if snakemake.wildcards.device == "cuda":
    # A cluster executor sets it per job; a local run uses the first GPU (one GPU job at a time).
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "0")

from rmbench.models.build import without_torch
from rmbench.models.data import load_set
from rmbench.plan.cells import parse_params
from rmbench.plan.glue import logged, read_json, write_json
from rmbench.plan.progress import launch_progress
from rmbench.probes.gemm import run_gemm_launch
from rmbench.probes.provenance import provenance
from rmbench.runtimes import spare_torch_import
from rmbench.studies.launch import run_launch
from rmbench.studies.tokenizer import run_tokenizer_launch

w = snakemake.wildcards
cell = {
    "study": w.study,
    "model": w.model,
    "device": w.device,
    "runtime": w.runtime,
    "params": w.params,
    "launch": int(w.launch),
}
print(launch_progress(snakemake.config, cell, Path(".")), flush=True)  # on the terminal, before the log

with logged(snakemake.log[0]):
    started_at = time.time()  # the order launches actually ran in (see launch.order_seed)
    settings = dict(snakemake.params.settings)
    binary = snakemake.input.get("binary")
    if settings.get("unsupported"):  # the runtime cannot score this model's family: said, untimed
        record = {"cell": cell, "settings": settings, "status": "unsupported", "metrics": {}}
        record["reason"] = settings["unsupported"]
    elif w.study == "gemm":
        record = run_gemm_launch(cell, snakemake.input.model, settings)
    elif w.study == "tokenizer":
        without_torch()  # it times tokenizers only
        rows = load_set(snakemake.input.rows)
        record = run_tokenizer_launch(cell, rows, snakemake.input.model, binary, settings)
    else:
        rows = load_set(snakemake.input.rows)
        reference = read_json(snakemake.input.reference)
        if reference["ids"] != [r["id"] for r in rows]:
            raise RuntimeError(f"{snakemake.input.reference} does not match {snakemake.input.rows}")
        scores = reference["scores"]
        if settings.get("rows"):  # a study that scores only the first rows of its set
            rows, scores = rows[: settings["rows"]], scores[: settings["rows"]]
        options = settings.get("options", {}) | parse_params(w.params)
        options |= {
            "binary": binary,
            "operators": snakemake.input.get("operators"),  # the native engine's, where the export calls them
            "cache_root": str(Path(snakemake.params.repo, "results/inductor-cache")),
        }
        spare_torch_import(w.runtime, w.device, options)  # ORT and native launches run no PyTorch
        gate = snakemake.input.get("fused_parity")  # the fused graph's gate may fail: then not timed
        record = run_launch(
            cell,
            rows,
            scores,
            snakemake.input.model,
            snakemake.input.get("onnx"),
            settings,
            options,
            read_json(gate) if gate else None,
        )
    record["started_at"] = started_at
    record["provenance"] = provenance(snakemake.params.repo, w.device)
    write_json(record, snakemake.output[0])
    print(f"{snakemake.output[0]}: {record['status']} {record['reason'] or ''}")
