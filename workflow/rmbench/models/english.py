"""English as people write it, for training the embedded DeBERTa tokenizer.

The generator's own vocabulary is a few hundred words. A SentencePiece model trained on it alone
knows those words and splits every other English word into pieces: on real hh-rlhf rows it gave
pairs twice as long as bert-base-uncased's. So the tokenizer also trains on dialogues whose words
are drawn from wordfreq's English frequency list (PyPI, frequencies of the web, books, subtitles
and news), with the punctuation, capitals and lists that hh-rlhf's turns have and the
generator's lack.

Every tenth word of the list from rank HELD_OUT_FROM on is left out of the English dialogues. Those
words test whether the tokenizer splits unseen English as a real vocabulary does
(tests/test_english.py); the most frequent words are all trained on, as in any English corpus.
"""

from __future__ import annotations

import numpy as np

from rmbench.models.synthetic import DialogueGenerator, Vocabulary, generate_split

LANGUAGE = "en"
HELD_OUT_FROM, HELD_OUT_EVERY = 5000, 10
# Per turn: the share of assistant replies written as a list, and per word the rates of the
# marks hh-rlhf's turns have (a word in capitals, a capitalised name, a span in parentheses or
# quotes, a colon, a dash or a slash between two words).
LIST_RATE = 0.15
CAPITALS_RATE, TITLE_RATE = 0.004, 0.04
PARENTHESES_RATE, QUOTES_RATE, COLON_RATE, DASH_RATE, SLASH_RATE = 0.01, 0.01, 0.01, 0.01, 0.004


def _is_word(token: str) -> bool:
    """Letters, with apostrophes or dots inside (don't, u.s): no digits, symbols or emoji."""
    return any(c.isalpha() for c in token) and all(c.isalpha() or c in "'." for c in token)


def english_words(n_words: int) -> list[tuple[str, float]]:
    """wordfreq's n most frequent English tokens that are words, with their frequencies.
    wordfreq folds case; the pronoun I is written as English writes it."""
    import wordfreq

    words = [w for w in wordfreq.top_n_list(LANGUAGE, n_words) if _is_word(w)]
    return [
        ("I" + w[1:] if w == "i" or w.startswith("i'") else w, wordfreq.word_frequency(w, LANGUAGE))
        for w in words
    ]


def held_out(rank: int) -> bool:
    return rank >= HELD_OUT_FROM and rank % HELD_OUT_EVERY == 0


def held_out_words(n_words: int) -> list[tuple[str, float]]:
    """The words left out of the English dialogues, with their frequencies."""
    return [w for rank, w in enumerate(english_words(n_words)) if held_out(rank)]


def english_vocabulary(n_words: int) -> Vocabulary:
    """The words the training text draws, by their frequency in English."""
    kept = [w for rank, w in enumerate(english_words(n_words)) if not held_out(rank)]
    return Vocabulary(tuple(w for w, _ in kept), np.array([f for _, f in kept]))


class EnglishStyle:
    """Marks of written English the generator does not make, put into its turns (seeded)."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def words(self, text: str) -> str:
        words = text.split(" ")
        draws = self.rng.random((len(words), 7))
        for i, word in enumerate(words):
            d = draws[i]
            if d[0] < CAPITALS_RATE and len(word) <= 5:
                word = word.upper()
            elif d[1] < TITLE_RATE:
                word = word[:1].upper() + word[1:]
            if d[2] < PARENTHESES_RATE and i + 2 < len(words):
                word, words[i + 2] = "(" + word, words[i + 2] + ")"
            elif d[3] < QUOTES_RATE and i + 1 < len(words):
                word, words[i + 1] = '"' + word, words[i + 1] + '"'
            if d[4] < COLON_RATE and word[-1:].isalpha():
                word += ":"
            elif d[5] < DASH_RATE:
                word += " -"
            elif d[6] < SLASH_RATE and i + 1 < len(words) and word[-1:].isalpha():
                word, words[i + 1] = word + "/" + words[i + 1], ""
            words[i] = word
        return " ".join(w for w in words if w)

    def as_list(self, text: str) -> str:
        """A reply as a numbered or bulleted list, one sentence an item."""
        items = [s.strip() for s in text.replace("? ", "?\n").replace(". ", ".\n").split("\n")]
        marks = [f"{k}." for k in range(1, len(items) + 1)] if self.rng.random() < 0.6 else ["-"] * len(items)
        return "\n".join(f"{m} {item}" for m, item in zip(marks, items, strict=True) if item)

    def turn(self, turn: str, assistant: bool) -> str:
        styled = self.words(turn)
        return self.as_list(styled) if assistant and self.rng.random() < LIST_RATE else styled


def turns(dialogues: list[dict]) -> list[tuple[str, bool]]:
    """Each turn's text and whether the assistant said it (the final reply included)."""
    out = []
    for d in dialogues:
        for turn in d["chosen"].split("\n\n"):
            speaker, _, text = turn.partition(": ")
            if text.strip():
                out.append((text.strip(), speaker == "Assistant"))
    return out


def english_turns(seed: int, rows: int, n_words: int) -> list[str]:
    """Turns of `rows` dialogues over wordfreq's English (seeded), styled as written English."""
    dialogues = DialogueGenerator(seed, english_vocabulary(n_words)).split(rows)
    style = EnglishStyle(seed + 1)
    return [style.turn(text, assistant) for text, assistant in turns(dialogues)]


def tokenizer_corpus(cfg: dict) -> list[str]:
    """What the embedded DeBERTa tokenizer trains on, one line per turn or list item: the
    generator's turns (the rows it will score) and English turns (the text users bring)."""
    dialogues = generate_split(cfg["spm_seed"], cfg["spm_corpus_rows"])
    generated = [turn for d in dialogues for turn in d["chosen"].split("\n\n") if turn]
    english = english_turns(cfg["spm_seed"] + 1, cfg["spm_english_rows"], cfg["spm_english_words"])
    return generated + [line for turn in english for line in turn.split("\n")]
