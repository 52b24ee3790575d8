"""Trains a DeBERTa-v3-style SentencePiece model on generated dialogues (seeded)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.glue import logged
from rmbench.models import train_sentencepiece
from rmbench.synthetic import generate_split

with logged(snakemake.log[0]):
    cfg = snakemake.params.tokenizers
    # A seed of its own: the tokenizer's corpus is not the split the sets are drawn from.
    dialogues = generate_split(cfg["spm_seed"], cfg["spm_corpus_rows"])
    lines = [turn for d in dialogues for turn in d["chosen"].split("\n\n") if turn]
    train_sentencepiece(lines, snakemake.output[0], cfg["spm_vocab_size"], cfg["spm_seed"])
    print(f"trained on {len(lines)} turns")
