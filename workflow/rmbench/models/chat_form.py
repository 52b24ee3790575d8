"""A model's chat template compiled into the form the native engine renders, and checked row by row.

The engine has no Jinja. For the rows rmbench scores (an hh-rlhf dialogue: user and assistant
turns, the reply last) most templates reduce to fixed text between turns and a fixed edit of each
turn's content. compile_form() finds that text by rendering the template on marker contents: the
glue between two turns, keyed by their kinds (start, user, assistant, final: the reply, end). It
then picks each kind's content edit (none, strip, or leading newlines removed) and verifies the
form against the template on a battery of dialogues. A template the form cannot express is
refused. Because a template may still treat some content specially (Qwen3's rewrites a reply
holding `</think>`), the runtime checks every row against the template (mismatch()) and refuses
the rows that differ: no row is scored on a text its template would not give.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

from jinja2 import TemplateError

from rmbench.errors import ModelSourceError

KINDS = ("user", "assistant", "final")
# Each content edit by name, in the order compile_form tries them; the engine implements the same.
EDITS = {
    "none": lambda text: text,
    "strip": str.strip,  # Jinja's trim: Python's str.strip, Unicode whitespace
    "lstrip_newlines": lambda text: text.lstrip("\n"),
}
MARKER = "\x00{}\x00"  # a turn's stand-in while the glue is found; no template edits it
# Dialogues (the kinds of their turns) whose renderings give the glue; a template may refuse some.
# Each has a user turn: Qwen3's template, for one, renders a reply with no user turn before it
# otherwise (such a row is refused by the check of every row).
SHAPES = (
    ("user", "final"),
    ("user", "assistant", "user", "final"),
    ("user", "assistant", "final"),
    ("user", "user", "final"),
    ("user", "assistant", "assistant", "final"),
    ("assistant", "user", "final"),
)
# What the battery's turns say: plain, empty, padded with whitespace, non-ASCII, markup as text.
BATTERY_CONTENTS = (
    "Hello there.",
    "",
    "  \n\tpadded on both sides \n ",
    "\n\nnewlines first",
    "Grüße, 東京 🙂 e\u0301",
    "a <think> tag and <|im_end|> <|eot_id|> as text",
    "\u3000ideographic space\u00a0",
)


class ChatFormError(ModelSourceError):
    """A chat template, or one row under it, the native engine's form cannot render exactly."""


def turn_kinds(messages: list[dict]) -> list[str]:
    """The kind of each turn: user or assistant, the last one `final` (the reply scored)."""
    return [*(m["role"] for m in messages[:-1]), "final"]


def render(form: dict, messages: list[dict]) -> str:
    """A dialogue's text by the form: as the engine renders it (native/src/chat_form.cpp)."""
    parts, previous = [], "start"
    for kind, message in zip(turn_kinds(messages), messages):
        parts += [glue(form, previous, kind), EDITS[form["edits"][kind]](message["content"])]
        previous = kind
    return "".join(parts) + glue(form, previous, "end")


def glue(form: dict, before: str, after: str) -> str:
    key = f"{before}>{after}"
    if key not in form["glue"]:
        raise ChatFormError(f"the chat template renders no {before} turn followed by {after}")
    return form["glue"][key]


def compile_form(jinja) -> dict:
    """The form of the template `jinja` renders (a function of a message list, as
    apply_chat_template(tokenize=False)); ChatFormError where it has none."""
    found: dict[str, str] = {}
    for shape in SHAPES:
        messages = [
            {"role": "assistant" if kind == "final" else kind, "content": MARKER.format(i)}
            for i, kind in enumerate(shape)
        ]
        try:
            text = jinja(messages)
        except TemplateError:  # the template refuses this shape (raise_exception): no glue from it
            continue
        pieces = re.split("\x00[0-9]+\x00", text)
        if len(pieces) != len(shape) + 1:
            raise ChatFormError("the chat template does not render each turn's content once, in order")
        for key, between in zip(
            (f"{a}>{b}" for a, b in itertools.pairwise(("start", *shape, "end"))), pieces, strict=True
        ):
            if found.setdefault(key, between) != between:
                raise ChatFormError(
                    f"the text between a {key.replace('>', ' turn and a ')} turn depends on the "
                    "turns around them: the engine's form cannot render this template"
                )
    if not {"start>user", "user>final", "final>end"} <= set(found):
        raise ChatFormError("the chat template does not render a user turn followed by a reply")
    form = {"glue": found, "edits": {kind: _edit(jinja, found, kind) for kind in KINDS if _has(found, kind)}}
    for messages in battery(form):
        if mismatch(form, jinja, messages):
            raise ChatFormError(f"the form differs from the chat template on {json.dumps(messages)}")
    return form


def _has(found: dict, kind: str) -> bool:
    return any(key.startswith(f"{kind}>") for key in found)


def _edit(jinja, found: dict, kind: str) -> str:
    """The first edit of EDITS under which the form renders padded contents of `kind` as the template does."""
    shape = next(s for s in SHAPES if kind in s and _renders(found, s))
    for name in EDITS:
        form = {"glue": found, "edits": {k: name if k == kind else "none" for k in KINDS}}
        probes = ["  \n lead and trail \n\n", "\n\n\tnewlines first", "\u3000wide\u2003"]
        if all(render(form, m) == jinja(m) for m in (_dialogue(shape, kind, p) for p in probes)):
            return name
    raise ChatFormError(f"the chat template edits a {kind} turn's content in a way the engine does not know")


def _renders(found: dict, shape: tuple) -> bool:
    return all(f"{a}>{b}" in found for a, b in itertools.pairwise(("start", *shape, "end")))


def _dialogue(shape: tuple, kind: str, content: str) -> list[dict]:
    """A dialogue of `shape` whose turns of `kind` say `content` (the others a plain sentence)."""
    return [
        {"role": "assistant" if k == "final" else k, "content": content if k == kind else "Plain words."}
        for k in shape
    ]


def battery(form: dict) -> list[list[dict]]:
    """Dialogues the form is verified on: every shape it renders, with each battery content in each turn."""
    dialogues = []
    for shape in SHAPES:
        if _renders(form["glue"], shape):
            for content, position in itertools.product(BATTERY_CONTENTS, range(len(shape))):
                dialogue = _dialogue(shape, "-", "Plain words.")
                dialogue[position]["content"] = content
                dialogues.append(dialogue)
    return dialogues


def mismatch(form: dict, jinja, messages: list[dict]) -> str | None:
    """Why the form does not render `messages` as the template does, or None where it does."""
    try:
        ours = render(form, messages)
    except ChatFormError as error:
        return str(error)
    theirs = jinja(messages)
    if ours != theirs:
        at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
        return f"the chat template renders this row differently from its form (from character {at}: {theirs[at : at + 40]!r})"
    return None


def folder_renderer(folder: str | Path):
    """The function apply_chat_template(tokenize=False) computes for a tokenizer folder, without
    loading the tokenizer: its template rendered with its special tokens, as transformers does."""
    from transformers.utils.chat_template_utils import render_jinja_template

    from rmbench.models.build import chat_template

    template = chat_template(folder)
    if template is None:
        raise ChatFormError(f"{folder} carries no chat template")
    tokens = special_tokens(Path(folder))
    return lambda messages: render_jinja_template([messages], chat_template=template, **tokens)[0][0]


def special_tokens(folder: Path) -> dict[str, str]:
    """The special tokens a template sees by name (bos_token, eos_token, ...), from tokenizer_config.json."""
    config_file = folder / "tokenizer_config.json"
    config = json.loads(config_file.read_text()) if config_file.exists() else {}
    names = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
    tokens = {}
    for name in names:
        value = config.get(name)
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            tokens[name] = value
    return tokens
