"""The tokenizer microbenchmark: microseconds per (prompt, response) pair, tokenization alone.

Compares the native engine's tokenizers with the Hugging Face fast (Rust) and slow (Python)
ones on the same rows, with the same truncation (longest_first to max_length). `hf_backend` is
the fast one's Rust tokenizer called directly (the `tokenizers` library, no transformers around
it): the difference to `hf_fast` is what transformers' Python wrapper costs, the rest is the
library itself.
"""

from __future__ import annotations

import time

import numpy as np

from rmbench.models.build import (
    chat_messages,
    chat_texts,
    folder_row_limit,
    load_tokenizer,
    token_ids,
    tokenizer_family,
)
from rmbench.studies.timing import percentile_summary

TOKENIZERS = ("native", "hf_fast", "hf_backend", "hf_slow", "tiktoken")
HF_TOKENIZERS = ("hf_fast", "hf_backend", "hf_slow")


def hf_encoder(model_dir, name: str, max_length: int):
    """One pair -> its token ids, the way Hugging Face tokenizer `name` (see HF_TOKENIZERS) does it."""
    from transformers.utils import logging

    logging.set_verbosity_error()  # the slow tokenizers warn on every truncated pair
    tokenizer = load_tokenizer(model_dir, fast=name != "hf_slow")
    chat = tokenizer_family(tokenizer)["input"] == "chat"
    if name == "hf_backend":  # this tokenizer's own Rust one: the wrapper is not used again
        backend = tokenizer.backend_tokenizer
        backend.enable_truncation(folder_row_limit(model_dir, max_length), strategy="longest_first")
        backend.no_padding()
        if chat:  # the template rendered as transformers does, then the Rust tokenizer alone
            return lambda p, r: (
                backend.encode(chat_texts(tokenizer, [(p, r)])[0], add_special_tokens=False).ids
            )
        # transformers drops an empty second text (`if text_pair`): no pair, one [SEP] fewer.
        return lambda p, r: (backend.encode(p, r) if r else backend.encode(p)).ids
    return lambda p, r: token_ids(tokenizer, p, r, max_length)


def tiktoken_encoder(model_dir, max_length: int):
    """One pair -> its token ids by tiktoken on the same ranks, as a user of tiktoken would write
    it: the template's text between turns joined by hand (no Jinja: the chat form the native engine
    renders, rmbench.models.chat_form), NFC where the vocabulary normalizes (tiktoken does not), added
    tokens matched, cut where the tokenizers cut (models.row_limit)."""
    import unicodedata

    from rmbench.models.byte_bpe import VOCABULARIES, tiktoken_encoding
    from rmbench.models.chat_form import compile_form, folder_renderer, render
    from rmbench.models.families import family_of_folder

    vocabulary = VOCABULARIES[family_of_folder(model_dir)["vocabulary"]]
    encoding, form = tiktoken_encoding(vocabulary), compile_form(folder_renderer(model_dir))
    limit = folder_row_limit(model_dir, max_length)  # the model's context: models.row_limit

    def encode(p, r):
        text = render(form, chat_messages(p, r))
        if vocabulary.nfc:
            text = unicodedata.normalize("NFC", text)
        return encoding.encode(text, allowed_special="all")[:limit]

    return encode


def time_hf(
    model_dir, pairs, name: str, repeat: int, warmup: int, max_length: int
) -> tuple[list[float], list[float]]:
    encode = (
        tiktoken_encoder(model_dir, max_length)
        if name == "tiktoken"
        else hf_encoder(model_dir, name, max_length)
    )
    for p, r in pairs[:warmup]:
        encode(p, r)
    times = np.zeros((repeat, len(pairs)))
    for k in range(repeat):
        for i, (p, r) in enumerate(pairs):
            start = time.perf_counter()
            encode(p, r)
            times[k, i] = time.perf_counter() - start
    return list(times.mean(axis=0) * 1e6), list(times.mean(axis=1) * 1e6)


def time_native(
    binary, model_dir, pairs, repeat: int, warmup: int, max_length: int
) -> tuple[list[float], list[float]]:
    from rmbench.runtimes.native import NativeRuntime

    engine = NativeRuntime(model_dir, None, "cpu", 1, max_length, {"binary": binary})
    engine.load()
    return engine.tokenize_times(pairs, repeat, warmup)


def run_tokenizer_launch(cell: dict, rows: list[dict], model_dir, binary, settings: dict) -> dict:
    """One launch: every pair tokenized `repeat` times; per pair the mean, per launch p50/mean,
    and the mean of the first pass alone (word caches are cold there: the native SentencePiece
    tokenizer and the Hugging Face Unigram model remember the words they have seen)."""
    pairs = [(r["prompt"], r["response"]) for r in rows]
    args = (settings["repeat"], settings["warmup_rows"], settings["max_length"])
    name = cell["runtime"]
    if name == "native":
        per_pair, per_pass = time_native(binary, model_dir, pairs, *args)
    elif name in TOKENIZERS:
        per_pair, per_pass = time_hf(model_dir, pairs, name, *args)
    else:
        raise ValueError(f"unknown tokenizer '{name}' ({', '.join(TOKENIZERS)})")
    metrics = percentile_summary(per_pair, "us") | {
        "first_pass_us": float(per_pass[0]),
        "n_rows": len(pairs),
        "per_pair_us": list(map(float, per_pair)),
        "per_pass_us": list(map(float, per_pass)),
    }
    return {"cell": cell, "settings": settings, "status": "ok", "reason": None, "metrics": metrics}
