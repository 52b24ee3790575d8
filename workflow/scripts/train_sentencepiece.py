"""Trains a DeBERTa-v3-style SentencePiece model on generated dialogues and English (seeded)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.models.build import train_sentencepiece
from rmbench.models.english import tokenizer_corpus
from rmbench.plan.glue import logged

with logged(snakemake.log[0]):
    cfg = snakemake.params.tokenizers
    lines = tokenizer_corpus(cfg)
    train_sentencepiece(lines, snakemake.output[0], cfg["spm_vocab_size"], cfg["spm_seed"])
    print(f"trained on {len(lines)} lines")
