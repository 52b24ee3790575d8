"""A seeded generator of hh-rlhf-shaped dialogues (the embedded default data source).

Real hh-rlhf cannot be downloaded here, so the default profile scores dialogues made by this
generator. It is calibrated to statistics of the real test split (8,552 rows), measured with the
bert-base-uncased WordPiece tokenizer on the (prompt, final reply) pair:
token count p10 48 / p50 170 / p90 427 / p99 850 / max 2000, 5.8% over 512 tokens,
1.285 tokens per whitespace word, Human turns per dialogue mean 2.4 / median 2 / p99 7.
tests/test_synthetic.py checks that a generated test-sized split lands on them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TEST_SPLIT_ROWS = 8552

# Pair length in WordPiece tokens: a log-normal split at its median, because the real
# distribution is wider below the median (p10/p50 = 0.28) than above it (p90/p50 = 2.5).
LOG_MEDIAN_TOKENS = math.log(170.0)
SIGMA_BELOW = (math.log(170.0) - math.log(48.0)) / 1.2816
SIGMA_ABOVE = (math.log(427.0) - math.log(170.0)) / 1.2816
MIN_TOKENS, MAX_TOKENS = 12, 2000
TOKENS_PER_WORD = 1.285

# Human turns per dialogue: mean 2.4, median 2, p99 7 (as in the real test split).
TURN_COUNTS = np.arange(1, 11)
TURN_PROBS = np.array([0.38, 0.26, 0.15, 0.09, 0.055, 0.03, 0.028, 0.004, 0.002, 0.001])
TURN_PROBS = TURN_PROBS / TURN_PROBS.sum()

# The generator's words, from words.json: common English words roughly by frequency (drawn with
# Zipf weights; order and repeats set each word's weight), morphemes for rarer words that
# WordPiece splits into several pieces, and names.
WORDS = json.loads((Path(__file__).with_name("words.json")).read_text(encoding="utf-8"))
COMMON_WORDS, PREFIXES, ROOTS, SUFFIXES, NAMES = (
    WORDS[k] for k in ("common", "prefixes", "roots", "suffixes", "names")
)

RARE_WORD_RATE = 0.03
NAME_RATE = 0.02
NUMBER_RATE = 0.015
COMMA_RATE = 0.07
APOSTROPHE_RATE = 0.015
APOSTROPHES = ("'s", "'t", "'re", "'ll")


@dataclass(frozen=True)
class Vocabulary:
    """The words a generator draws, each with its weight (any positive scale)."""

    words: tuple[str, ...]
    weights: np.ndarray

    @classmethod
    def zipf(cls, words: list[str], exponent: float = 0.9) -> Vocabulary:
        """Words listed by frequency, drawn with weights 1 / rank**exponent."""
        return cls(tuple(words), 1.0 / np.arange(1, len(words) + 1) ** exponent)


# The generator's own words: the default data source's vocabulary.
GENERATED = Vocabulary.zipf(COMMON_WORDS)


class DialogueGenerator:
    """Generates hh-rlhf rows ({"chosen", "rejected"}) from one seed, over a vocabulary (the
    generator's own by default; rmbench.models.english draws English as people write it)."""

    def __init__(self, seed: int, vocabulary: Vocabulary = GENERATED):
        self.rng = np.random.default_rng(seed)
        self.vocabulary = vocabulary.words
        self.word_cdf = np.cumsum(vocabulary.weights / vocabulary.weights.sum())

    # -- words and sentences -------------------------------------------------------------
    def _pick(self, options):
        """rng.choice(options) without its conversion of the list to an array: the same draw
        (one integer below len(options)) at a fraction of the cost."""
        return options[self.rng.integers(len(options))]

    def _rare_word(self) -> str:
        parts = [self._pick(ROOTS), self._pick(SUFFIXES)]
        if self.rng.random() < 0.5:
            parts.insert(0, self._pick(PREFIXES))
        return "".join(parts)

    def _number(self) -> str:
        kind = self.rng.integers(4)
        if kind == 0:
            return str(self.rng.integers(2, 100))
        if kind == 1:
            return str(self.rng.integers(1900, 2030))
        if kind == 2:
            return f"{self.rng.integers(1, 20)}.{self.rng.integers(0, 10)}"
        return f"${self.rng.integers(5, 500)}"

    def _words(self, n: int) -> list[str]:
        # Drawn in bulk: per-word draws from a weighted vocabulary dominate the run time.
        picks = np.searchsorted(self.word_cdf, self.rng.random(n) * self.word_cdf[-1], side="right")
        words = [self.vocabulary[i] for i in picks]
        kind = self.rng.random(n)
        for i in np.flatnonzero(kind < RARE_WORD_RATE + NAME_RATE + NUMBER_RATE):
            if kind[i] < RARE_WORD_RATE:
                words[i] = self._rare_word()
            elif kind[i] < RARE_WORD_RATE + NAME_RATE:
                words[i] = self._pick(NAMES)
            else:
                words[i] = self._number()
        for i in np.flatnonzero(self.rng.random(n) < APOSTROPHE_RATE):
            words[i] += self._pick(APOSTROPHES)
        for i in np.flatnonzero(self.rng.random(n) < COMMA_RATE):
            words[i] += ","
        return words

    def _text(self, n_words: int, question_rate: float) -> str:
        words = self._words(max(1, n_words))
        sentences, start = [], 0
        while start < len(words):
            n = max(1, round(self.rng.lognormal(math.log(11), 0.45)))
            sentence = words[start : start + n]
            start += n
            sentence[0] = sentence[0][:1].upper() + sentence[0][1:]
            last = sentence[-1].rstrip(",")
            end = "?" if self.rng.random() < question_rate else "." if self.rng.random() < 0.8 else "!"
            sentence[-1] = last + end
            sentences.append(" ".join(sentence))
        return " ".join(sentences)

    # -- dialogues -----------------------------------------------------------------------
    def pair_tokens(self) -> int:
        """Draws a (prompt, final reply) pair length in WordPiece tokens."""
        z = self.rng.standard_normal()
        sigma = SIGMA_BELOW if z < 0 else SIGMA_ABOVE
        return int(np.clip(round(math.exp(LOG_MEDIAN_TOKENS + sigma * z)), MIN_TOKENS, MAX_TOKENS))

    def dialogue(self) -> dict:
        n_human = int(self.rng.choice(TURN_COUNTS, p=TURN_PROBS))
        n_turns = 2 * n_human
        # Each turn marker ("Human:", "Assistant:") costs two tokens; [CLS] and 2x[SEP] three more.
        content_tokens = max(n_turns, self.pair_tokens() - 2 * n_turns - 3)
        n_words = max(n_turns, round(content_tokens / TOKENS_PER_WORD))
        shares = self.rng.gamma(2.0, size=n_turns)
        shares[-1] *= 1.5  # final replies run a little longer than the turns before them
        words = np.maximum(1, np.round(n_words * shares / shares.sum())).astype(int)
        turns = []
        for i, w in enumerate(words[:-1]):
            speaker = "Human" if i % 2 == 0 else "Assistant"
            turns.append(f"\n\n{speaker}: " + self._text(w, 0.5 if speaker == "Human" else 0.1))
        context = "".join(turns) + "\n\nAssistant:"
        chosen = " " + self._text(words[-1], 0.1)
        rejected_words = max(1, round(words[-1] * self.rng.lognormal(0.0, 0.5)))
        rejected = " " + self._text(rejected_words, 0.1)
        return {"chosen": context + chosen, "rejected": context + rejected}

    def split(self, n_rows: int = TEST_SPLIT_ROWS) -> list[dict]:
        return [self.dialogue() for _ in range(n_rows)]


def generate_split(seed: int, n_rows: int = TEST_SPLIT_ROWS) -> list[dict]:
    """A test-split-sized list of hh-rlhf rows, deterministic for a given seed."""
    return DialogueGenerator(seed).split(n_rows)
