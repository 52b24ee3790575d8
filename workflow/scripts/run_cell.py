"""One launch of one cell, in this fresh process; writes its result record."""

import os

import _bootstrap  # noqa: F401  (makes rmbench importable)

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one pair at a time: no Rust thread pool

from rmbench.cells import parse_params
from rmbench.data import load_set
from rmbench.glue import logged, read_json, write_json
from rmbench.launch import run_launch
from rmbench.provenance import provenance
from rmbench.tokenizer_bench import run_tokenizer_launch

with logged(snakemake.log[0]):
    w = snakemake.wildcards
    cell = {
        "study": w.study,
        "model": w.model,
        "device": w.device,
        "runtime": w.runtime,
        "params": w.params,
        "launch": int(w.launch),
    }
    rows = load_set(snakemake.input.rows)
    settings = dict(snakemake.params.settings)
    binary = snakemake.input.get("binary")
    if w.study == "tokenizer":
        record = run_tokenizer_launch(cell, rows, snakemake.input.model, binary, settings)
    else:
        reference = read_json(snakemake.input.reference)
        if reference["ids"] != [r["id"] for r in rows]:
            raise RuntimeError(f"{snakemake.input.reference} does not match {snakemake.input.rows}")
        options = parse_params(w.params) | {"binary": binary}
        record = run_launch(
            cell, rows, reference["scores"], snakemake.input.model, snakemake.input.onnx, settings, options
        )
    record["provenance"] = provenance(snakemake.params.repo, w.device)
    write_json(record, snakemake.output[0])
    print(f"{snakemake.output[0]}: {record['status']} {record['reason'] or ''}")
