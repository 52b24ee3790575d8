"""The embedded DeBERTa tokenizer splits English as a real vocabulary does: tokens per word within
15% of bert-base-uncased's on English it never trained on, and the generated rows' lengths still
on the real test split's."""

import re

import numpy as np
import pytest
from conftest import ROOT, default_split
from rmbench.models.build import load_tokenizer, wordpiece_vocab
from rmbench.models.data import split_dialogue
from rmbench.models.english import english_vocabulary, english_words, held_out_words

WORDS = 40000  # the schema's default spm_english_words


@pytest.fixture(scope="module")
def deberta(config_deberta_tokenizers):
    return load_tokenizer(config_deberta_tokenizers["default"])


@pytest.fixture(scope="module")
def bert():
    from transformers import ElectraTokenizerFast

    return ElectraTokenizerFast(vocab_file=str(wordpiece_vocab()), do_lower_case=True)


def prose(markdown: str) -> list[str]:
    """A Markdown file's paragraphs of prose: no code blocks, no tables."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.DOTALL)
    return [p for p in text.split("\n\n") if p.strip() and not p.lstrip().startswith("|")]


def tokens(tokenizer, texts: list[str]) -> np.ndarray:
    return np.array(
        [len(ids) for ids in tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]]
    )


def test_tokens_per_word_on_the_docs_within_15_percent_of_berts(deberta, bert):
    files = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
    paragraphs = [p for f in files for p in prose(f.read_text(encoding="utf-8"))]
    words = sum(len(p.split()) for p in paragraphs)
    assert len(paragraphs) > 200 and words > 20000
    ratio = tokens(deberta, paragraphs).sum() / tokens(bert, paragraphs).sum()
    assert abs(ratio - 1) <= 0.15, f"DeBERTa's tokens per word on the docs are {ratio:.3f}x BERT's"


def test_tokens_per_word_on_englishs_frequency_list_within_15_percent_of_berts(deberta, bert):
    """Each of the list's words weighted by how often English uses it. Every tenth word past
    rank 5000 is left out of the English dialogues, so the list holds unseen words at about their
    rate in English."""
    listed = english_words(WORDS)
    words = [w for w, _ in listed]
    frequency = np.array([f for _, f in listed])
    per_word = {
        name: (tokens(tok, words) * frequency).sum() / frequency.sum()
        for name, tok in (("deberta", deberta), ("bert", bert))
    }
    assert abs(per_word["deberta"] / per_word["bert"] - 1) <= 0.15, per_word


def test_held_out_words_are_not_in_the_training_vocabulary():
    held = {w for w, _ in held_out_words(WORDS)}
    assert len(held) > 3000
    assert not held & set(english_vocabulary(WORDS).words)


@pytest.fixture(scope="module")
def generated_pair_lengths(deberta):
    pairs = [split_dialogue(r["chosen"]) for r in default_split()[:3000]]
    encoded = deberta([p for p, _ in pairs], [r for _, r in pairs], verbose=False)
    return np.array([len(ids) for ids in encoded["input_ids"]])


@pytest.mark.parametrize("q, real", [(10, 48), (50, 170), (90, 427)])
def test_generated_pair_lengths_under_the_deberta_tokenizer_stay_calibrated(generated_pair_lengths, q, real):
    """tests/test_synthetic.py checks the generator with bert-base-uncased; DeBERTa's own
    tokenizer gives the rows it scores the real split's lengths too."""
    assert abs(np.percentile(generated_pair_lengths, q) / real - 1) <= 0.15
    assert 0.03 <= (generated_pair_lengths > 512).mean() <= 0.09
