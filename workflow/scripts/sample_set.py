"""Draws one seeded sample set and records each model's token count per row."""

from pathlib import Path

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.models.build import count_tokens, load_tokenizer, without_torch
from rmbench.models.data import load_local, read_jsonl, sample_rows, write_jsonl
from rmbench.plan.glue import logged

with logged(snakemake.log[0]):
    without_torch()  # token counts only
    source = snakemake.params.source
    split = load_local(snakemake.input.split) if source == "local" else read_jsonl(snakemake.input.split)
    prefix = {"synthetic": "synth", "hub": "hh-test"}.get(source, Path(snakemake.input.split).stem)
    rows = sample_rows(split, snakemake.params.size, snakemake.params.seed, prefix)
    tokenizers = {m: load_tokenizer(d) for m, d in zip(snakemake.params.models, snakemake.input.tokenizers)}
    count_tokens(rows, tokenizers)
    write_jsonl(rows, snakemake.output[0])
    print(f"drew {len(rows)} of {len(split)} rows with seed {snakemake.params.seed}")
