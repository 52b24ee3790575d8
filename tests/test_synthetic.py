"""The synthetic generator lands on the real hh-rlhf test split's statistics."""

import numpy as np
import pytest
from conftest import default_split
from rmbench.models.build import wordpiece_vocab
from rmbench.models.data import split_dialogue
from rmbench.models.synthetic import TEST_SPLIT_ROWS, generate_split


@pytest.fixture(scope="module")
def split():
    """The default config's split (seed 20260607, the real test split's size), drawn once."""
    return default_split()


@pytest.fixture(scope="module")
def pair_tokens(split):
    from transformers import ElectraTokenizerFast

    tok = ElectraTokenizerFast(vocab_file=str(wordpiece_vocab()), do_lower_case=True)
    pairs = [split_dialogue(r["chosen"]) for r in split]
    enc = tok([p for p, _ in pairs], [r for _, r in pairs], truncation=False, verbose=False)
    words = sum(len(p.split()) + len(r.split()) for p, r in pairs)
    lengths = np.array([len(ids) for ids in enc["input_ids"]])
    return lengths, words


def test_split_is_test_sized_and_deterministic(split):
    assert len(split) == TEST_SPLIT_ROWS
    assert generate_split(20260607, 5) == split[:5]
    assert generate_split(20260608, 5) != split[:5]


@pytest.mark.parametrize("q, real", [(10, 48), (50, 170), (90, 427)])
def test_pair_length_quantiles_within_15_percent(pair_tokens, q, real):
    lengths, _ = pair_tokens
    assert abs(np.percentile(lengths, q) / real - 1) <= 0.15


def test_share_over_512_tokens(pair_tokens):
    lengths, _ = pair_tokens
    assert 0.03 <= (lengths > 512).mean() <= 0.09
    assert lengths.max() <= 2100


def test_tokens_per_word(pair_tokens):
    lengths, words = pair_tokens
    assert abs(lengths.sum() / words / 1.285 - 1) <= 0.05


def test_human_turns(split):
    turns = np.array([r["chosen"].count("\n\nHuman:") for r in split])
    assert np.median(turns) == 2
    assert abs(turns.mean() - 2.4) <= 0.2
    assert np.percentile(turns, 99) == pytest.approx(7, abs=1)


def test_rows_are_hh_rlhf_shaped(split):
    for row in split[:50]:
        prompt_c, chosen = split_dialogue(row["chosen"])
        prompt_r, rejected = split_dialogue(row["rejected"])
        assert prompt_c == prompt_r and prompt_c.startswith("\n\nHuman: ")
        assert chosen and rejected
