"""The service's request bodies and answers: rmbench's own /score, OpenRLHF's remote reward
protocol at /get_reward (its client: rmbench.studies.load), vLLM's /classify (verl's reward loop) and
SGLang's reward form of /v1/embeddings. Every check here answers 422 naming its field, before any
text reaches a tokenizer.

POST /score {"pairs": [{"prompt": ..., "response": ...}, ...]} -> {"scores": [...], "server_ms": t}
POST /get_reward {"query": [...], "prompts": [...], "labels": [...]}
    -> {"rewards": [...], "scores": [...], "extra_logs": {"server_ms": [...], "scored_as": [...]}, ...}
POST /classify {"model": ..., "input": text or [texts], "activation": false}
    -> {"object": "list", "data": [{"index": i, "probs": [score], ...}], "usage": {...}, ...}
POST /v1/embeddings {"model": ..., "input": text or [texts]}
    -> {"object": "list", "data": [{"index": i, "embedding": [score], ...}], "usage": {...}, ...}
"""

# No `from __future__ import annotations` here: pydantic reads the models' annotations.
import math
import time
import uuid
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr

from rmbench.models.data import split_dialogue
from rmbench.service.rendered import RenderedText


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
NonEmptyText = Annotated[Text, Field(min_length=1)]


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

        def rows(self, rendered: RenderedText) -> tuple[list, list[str]]:
            """Each query's row and how it is scored. A query the model's template rendered
            (rendered.templated) is scored as the text it is, as the trainer's own server scores
            it; else (prompt, response) from hh-rlhf text: after its prompt where one is sent and
            begins it, else split at its last '\\n\\nAssistant:' (rmbench.models.data.split_dialogue)."""
            for name in ("prompts", "labels"):
                values = getattr(self, name)
                if values is not None and len(values) != len(self.query):
                    raise ValueError(f"{name}: {len(values)} {name} for {len(self.query)} queries")
            rows, paths = [], []
            for i, query in enumerate(self.query):
                if rendered.templated(query, i):
                    rows.append(rendered.as_sent(query))
                    paths.append("templated")
                    continue
                paths.append("hh-rlhf")
                prompt = self.prompts[i] if self.prompts is not None else None
                if prompt and query.startswith(prompt):
                    rows.append((prompt, query[len(prompt) :].strip()))
                    continue
                try:
                    rows.append(split_dialogue(query))
                except ValueError as e:
                    raise ValueError(
                        f"query {i}: {e} (send hh-rlhf text, its prompt in 'prompts', or the "
                        "conversation as the model's chat template renders it)"
                    ) from None
            return rows, paths

    # a text, or a list of them; each holds a token to read a score from
    Inputs = NonEmptyText | Annotated[list[NonEmptyText], Field(min_length=1, max_length=max_pairs)]

    class ClassifyRequest(BaseModel):
        """vLLM's classification call (verl's reward loop): texts rendered already, one score each;
        `activation` (or `use_activation`) false: the raw logit, else its sigmoid."""

        model_config = ConfigDict(extra="ignore")
        model: str | None = None
        input: Inputs
        activation: bool | None = None
        use_activation: bool | None = None

        def texts(self) -> list[str]:
            return [self.input] if isinstance(self.input, str) else list(self.input)

        def raw(self) -> bool:
            return self.activation is False or self.use_activation is False

    class EmbeddingsRequest(BaseModel):
        """SGLang's reward models answer /v1/embeddings: one raw score per text."""

        model_config = ConfigDict(extra="ignore")
        model: str | None = None
        input: Inputs

        def texts(self) -> list[str]:
            return [self.input] if isinstance(self.input, str) else list(self.input)

    return ScoreRequest, RewardRequest, ClassifyRequest, EmbeddingsRequest


def reward_answer(rewards: list[float], server_ms: float, paths: list[str]) -> dict:
    """/get_reward's answer: `rewards`, and what newer OpenRLHF clients also read: `scores` (for
    filtering; a reward model's are its rewards) and `extra_logs` (logged per sample: the time,
    and which path scored each query)."""
    return {
        "rewards": rewards,
        "scores": rewards,
        "extra_logs": {"server_ms": [server_ms] * len(rewards), "scored_as": paths},
        "server_ms": server_ms,
    }


def pooling_answer(kind: str, model: str, scores: list[float], tokens: int, key: str) -> dict:
    """vLLM's /classify answer (key probs) and SGLang's /v1/embeddings one (key embedding): one
    entry per input, its score as a list of one."""
    extra = {"object": "embedding"} if key == "embedding" else {"num_classes": 1}
    return {
        "id": f"{kind}-{uuid.uuid4().hex}",
        "object": "list",
        "created": int(time.time()),
        "model": model,
        "data": [{"index": i, key: [score]} | extra for i, score in enumerate(scores)],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0},
    }


def sigmoid(logit: float) -> float:
    """vLLM's activation of a one-label classifier, stable at either end."""
    if logit >= 0:
        return 1.0 / (1.0 + math.exp(-logit))
    return math.exp(logit) / (1.0 + math.exp(logit))
