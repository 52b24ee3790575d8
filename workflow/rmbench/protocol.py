"""The service's request bodies and answers: rmbench's own /score, and OpenRLHF's remote reward
protocol at /get_reward (its client: rmbench.load). Every check here answers 422 naming its field,
before any text reaches a tokenizer.

POST /score {"pairs": [{"prompt": ..., "response": ...}, ...]} -> {"scores": [...], "server_ms": t}
POST /get_reward {"query": [...], "prompts": [...], "labels": [...]}
    -> {"rewards": [...], "scores": [...], "extra_logs": {"server_ms": [...]}, "server_ms": t}
"""

# No `from __future__ import annotations` here: pydantic reads the models' annotations.
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr

from .data import split_dialogue


def valid_unicode(text: str) -> str:
    """JSON may carry lone surrogates ("\\ud800") that no tokenizer can encode: named here, a 422."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(
            f"invalid Unicode: lone surrogate U+{ord(text[e.start]):04X} at character {e.start}"
        ) from None
    return text


Text = Annotated[StrictStr, AfterValidator(valid_unicode)]


class Pair(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt: Text
    response: Text


def request_models(max_pairs: int) -> tuple[type[BaseModel], type[BaseModel]]:
    """The two endpoints' bodies, with at most `max_pairs` rows each."""

    class ScoreRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        pairs: list[Pair] = Field(min_length=1, max_length=max_pairs)

    class RewardRequest(BaseModel):
        """OpenRLHF's remote reward model call: each query a whole dialogue in hh-rlhf form,
        prompt and response together; `prompts`, where sent, the prompt part of each; `labels`
        (reference answers for rule-based rewards) accepted and unused by a reward model."""

        model_config = ConfigDict(extra="ignore")
        query: list[Text] = Field(min_length=1, max_length=max_pairs)
        prompts: list[Text] | None = None
        labels: list[Any] | None = None

        def pairs(self) -> list[tuple[str, str]]:
            """(prompt, response) per query: after its prompt where one is sent and begins it,
            else split at its last '\\n\\nAssistant:' as the data is (rmbench.data.split_dialogue)."""
            for name in ("prompts", "labels"):
                values = getattr(self, name)
                if values is not None and len(values) != len(self.query):
                    raise ValueError(f"{name}: {len(values)} {name} for {len(self.query)} queries")
            pairs = []
            for i, query in enumerate(self.query):
                prompt = self.prompts[i] if self.prompts is not None else None
                if prompt and query.startswith(prompt):
                    pairs.append((prompt, query[len(prompt) :].strip()))
                    continue
                try:
                    pairs.append(split_dialogue(query))
                except ValueError as e:
                    raise ValueError(
                        f"query {i}: {e} (send hh-rlhf text, or its prompt in 'prompts')"
                    ) from None
            return pairs

    return ScoreRequest, RewardRequest


def reward_answer(rewards: list[float], server_ms: float) -> dict:
    """/get_reward's answer: `rewards`, and what newer OpenRLHF clients also read: `scores` (for
    filtering; a reward model's are its rewards) and `extra_logs` (logged per sample)."""
    return {
        "rewards": rewards,
        "scores": rewards,
        "extra_logs": {"server_ms": [server_ms] * len(rewards)},
        "server_ms": server_ms,
    }
