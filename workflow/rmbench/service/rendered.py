"""Texts a trainer renders itself, and the one rule that decides how the service scores them.

OpenRLHF with --apply_chat_template posts the policy's decoded conversation, special tokens kept;
its own reward server scores that text as it stands (tokenizer(query, add_special_tokens=False)).
verl renders the conversation with the reward model's template, strips a leading BOS, and posts
it to vLLM's /classify, which tokenizes it with special tokens (Llama-3's BOS first again). The
service scores the same texts the same way (docs/runtimes.md, "What each endpoint scores").
"""

from __future__ import annotations

from dataclasses import dataclass

from rmbench.errors import ModelSourceError

PROBE = ("\n\nHuman: a\n\nAssistant:", "b")  # a dialogue whose rendering shows the template's markup


class AmbiguousText(ModelSourceError):
    """A query the service cannot score safely as either kind of text (answered 422)."""


@dataclass(frozen=True)
class RenderedText:
    """What marks a text as rendered by the model's template. `openings`: the special tokens its
    rendering starts with, in order (Llama-3.1's: BOS, then a header's start; none for a pair
    model or a template that opens with plain text); `markup`: the special tokens its rendering
    holds; `bos`: the token the tokenizer puts before a text it encodes with special tokens
    (Llama-3's), else None."""

    openings: tuple[str, ...]
    markup: tuple[str, ...]
    bos: str | None

    @classmethod
    def of(cls, tokenizer) -> RenderedText:
        """Read from a model's tokenizer (rmbench.models.build.load_tokenizer) and its template."""
        from rmbench.models.build import chat_texts, tokenizer_family

        if tokenizer_family(tokenizer)["input"] != "chat":
            return cls((), (), None)
        (text,) = chat_texts(tokenizer, [PROBE])
        special = {t.content for t in tokenizer.added_tokens_decoder.values() if t.special}
        markup = tuple(sorted(t for t in special if t in text))
        openings, rest = [], text
        while opening := next((t for t in markup if rest.startswith(t)), None):
            openings.append(opening)
            rest = rest[len(opening) :]
        plain, marked = (tokenizer("x", add_special_tokens=flag)["input_ids"] for flag in (False, True))
        added = marked[: len(marked) - len(plain)] if marked[len(marked) - len(plain) :] == plain else []
        bos = tokenizer.convert_ids_to_tokens(added[0]) if len(added) == 1 else None
        return cls(tuple(openings), markup, bos)

    def templated(self, query: str, i: int) -> bool:
        """Whether /get_reward scores query `i` as the text it is (True) or as hh-rlhf text
        (False). AmbiguousText where it carries the template's markup but does not open as the
        template does: wrapping it in the template again, or scoring it bare, would both guess."""
        if any(query.startswith(t) for t in self.openings):
            return True
        found = [t for t in self.markup if t in query]
        if found:
            opens = " or ".join(self.openings) or "plain text"
            raise AmbiguousText(
                f"query {i} holds the chat template's markup ({', '.join(found)}) but does not open "
                f"as the template does (with {opens}): send the whole conversation as the template "
                "renders it, or hh-rlhf text without the markup"
            )
        return False

    def as_sent(self, text: str) -> str:
        """A rendered text as a trainer's server scores it: a leading duplicate BOS dropped."""
        if self.bos and text.startswith(self.bos * 2):
            return text[len(self.bos) :]
        return text

    def as_classified(self, text: str) -> str:
        """A /classify input as vLLM scores it: tokenized with special tokens, so a chat model's
        BOS first (once). A pair model's text gets its [CLS] and [SEP] from the tokenizer."""
        if self.bos and not text.startswith(self.bos):
            return self.bos + text
        return self.as_sent(text)
