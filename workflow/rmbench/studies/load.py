"""A trainer's load on the reward service, made the way OpenRLHF's remote reward model client
makes it: each sample its own POST, many clients at once, a timeout per request and a few
retries with a pause between them. The body is one of three shapes (BODIES): hh-rlhf text to
/get_reward, OpenRLHF's templated query with its prompt to /get_reward (--apply_chat_template),
or verl's rendered text to vLLM's /classify.

Two things differ from OpenRLHF's client, both what a careful client does: a 4xx is final (the
same body fails again), and a 503's Retry-After sets the pause. Every request ends in exactly one
outcome: a reward, an explicit error (4xx), given up after its retries (every try a 503, 504 or
5xx), or lost (no usable answer: a refused connection or a timeout on the last try, or a 200
without a reward). A service that holds up under load loses none.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from rmbench.models.build import chat_messages, load_tokenizer
from rmbench.studies.concurrency import Counter, run_together

OUTCOMES = ("reward", "error", "gave_up", "lost")

# What a broken trainer sends: each body fails validation in a different field.
MALFORMED_BODIES = (
    {"query": ["\ud800 a lone surrogate"]},
    {"query": ["a dialogue without an assistant turn"]},
    {"query": [17]},
    {"query": []},
    {"query": "not a list"},
    {"queries": ["a misspelt field"]},
)
MALFORMED_CLASSIFY = (
    {"input": "\ud800 a lone surrogate"},
    {"input": 17},
    {"input": []},
    {"input": [""]},
    {"inputs": ["a misspelt field"]},
)


def hh_query(prompt: str, reply: str) -> str:
    """A pair as one dialogue, as OpenRLHF sends hh-rlhf text to /get_reward (the server splits it)."""
    return f"{prompt} {reply}"


def openrlhf_sample(tokenizer, prompt: str, reply: str) -> tuple[str, str]:
    """OpenRLHF's client with --apply_chat_template: (query, prompt). The prompt goes through the
    reward model's template with the generation prompt; the query is the policy's sequence
    decoded with its special tokens."""
    messages = chat_messages(prompt, reply)
    templated = tokenizer.apply_chat_template(messages[:-1], tokenize=False, add_generation_prompt=True)
    rendered = tokenizer.apply_chat_template(messages, tokenize=False)
    return tokenizer.decode(tokenizer(rendered, add_special_tokens=False)["input_ids"]), templated


def verl_sample(tokenizer, prompt: str, reply: str) -> str:
    """verl's reward loop: the dialogue through the reward model's own template, a leading BOS
    stripped (vLLM adds it back)."""
    text = tokenizer.apply_chat_template(chat_messages(prompt, reply), tokenize=False)
    return text.removeprefix(tokenizer.bos_token) if tokenizer.bos_token else text


def get_reward_answer(answer: dict) -> float:
    """The one sample's reward in /get_reward's answer, as OpenRLHF reads it."""
    return answer["rewards"][0]


@dataclass(frozen=True)
class BodyShape:
    """How a trainer sends one sample: the endpoint, the sample from a (prompt, reply) pair
    (with the reward model's tokenizer, where it templates), its body, and where the answer
    holds its reward."""

    path: str
    sample: Callable[[Any, str, str], Any]
    body: Callable[[Any], dict]
    reward: Callable[[dict], float]
    malformed: tuple[dict, ...]
    templated: bool  # rendered with the model's chat template: chat families only


BODIES = {
    "hh": BodyShape(
        "/get_reward",
        lambda _, prompt, reply: hh_query(prompt, reply),
        lambda query: {"query": [query]},
        get_reward_answer,
        MALFORMED_BODIES,
        templated=False,
    ),
    "openrlhf": BodyShape(
        "/get_reward",
        openrlhf_sample,
        lambda sample: {"query": [sample[0]], "prompts": [sample[1]], "labels": [None]},
        get_reward_answer,
        MALFORMED_BODIES,
        templated=True,
    ),
    "verl": BodyShape(
        "/classify",
        verl_sample,
        lambda text: {"model": "reward", "input": text, "activation": False},
        lambda answer: answer["data"][-1]["probs"][-1],
        MALFORMED_CLASSIFY,
        templated=True,
    ),
}


def trainer_samples(shape: BodyShape, model_dir, pairs: list[tuple[str, str]]) -> list:
    """Each pair as the trainer of `shape` holds it (templated with the model's tokenizer where
    the shape renders)."""
    tokenizer = load_tokenizer(model_dir) if shape.templated else None
    return [shape.sample(tokenizer, prompt, reply) for prompt, reply in pairs]


@dataclass
class Answer:
    outcome: str
    status: int | None  # the last HTTP status (None: no answer)
    tries: int
    latency_ms: float  # first try to last answer, retries and pauses included
    reward: float | None = None
    retried_503: int = 0


def openrlhf_request(
    url: str,
    body: dict,
    timeout_s: float = 180.0,
    tries: int = 5,
    pause_s: float = 1.0,
    headers: dict | None = None,
    reward: Callable[[dict], float] = get_reward_answer,
) -> Answer:
    """One sample's POST as OpenRLHF's `request_api_wrapper` makes it (requests.post with a JSON
    body and a timeout, `tries` times, a pause between), reading its reward with `reward`."""
    import requests

    started, status, retried_503 = time.perf_counter(), None, 0
    for attempt in range(1, tries + 1):
        pause = pause_s
        try:
            response = requests.post(
                url,
                json=body,
                headers={"Content-Type": "application/json", **(headers or {})},
                timeout=timeout_s,
            )
        except requests.RequestException:
            status = None
        else:
            status = response.status_code
            elapsed_ms = (time.perf_counter() - started) * 1e3
            if status == 200:
                try:
                    value = float(reward(response.json()))
                except (ValueError, KeyError, IndexError, TypeError):  # a 200 without a reward
                    return Answer("lost", status, attempt, elapsed_ms, None, retried_503)
                return Answer("reward", status, attempt, elapsed_ms, value, retried_503)
            if 400 <= status < 500:
                return Answer("error", status, attempt, elapsed_ms, None, retried_503)
            if status == 503:
                retried_503 += 1
                pause = float(response.headers.get("Retry-After", pause_s))
        if attempt < tries:
            time.sleep(pause)
    outcome = "lost" if status is None else "gave_up"
    return Answer(outcome, status, tries, (time.perf_counter() - started) * 1e3, None, retried_503)


def load_bodies(
    samples: list, requests: int, malformed_share: float, seed: int, shape: BodyShape = BODIES["hh"]
) -> list[tuple[dict, bool]]:
    """`requests` one-sample bodies of `shape` cycling over `samples`, the share `malformed_share`
    of them (at places `seed` chooses) replaced by broken ones; each with whether it is well formed."""
    rng = random.Random(seed)
    broken = set(rng.sample(range(requests), round(malformed_share * requests)))
    return [
        (rng.choice(shape.malformed), False) if i in broken else (shape.body(samples[i % len(samples)]), True)
        for i in range(requests)
    ]


def run_load(
    url: str,
    samples: list,
    clients: int,
    requests: int,
    malformed_share: float = 0.0,
    seed: int = 0,
    timeout_s: float = 180.0,
    tries: int = 5,
    pause_s: float = 1.0,
    headers: dict | None = None,
    shape: BodyShape = BODIES["hh"],
) -> dict:
    """`clients` threads send `requests` one-sample POSTs of `shape` to `url` (its endpoint), each
    client its next body as soon as its last is answered. `samples`: as trainer_samples makes
    them (hh: the dialogue texts). Returns every answer in body order, the counts per outcome,
    throughput and latency percentiles of the answered well-formed requests."""
    bodies = load_bodies(samples, requests, malformed_share, seed, shape)
    answers: list[Answer] = [Answer("lost", None, 0, math.nan)] * len(bodies)  # until answered
    pending = Counter(len(bodies))

    def client() -> None:
        while (i := pending.take()) is not None:
            answers[i] = openrlhf_request(url, bodies[i][0], timeout_s, tries, pause_s, headers, shape.reward)

    wall_s = run_together([client] * clients, "load-client")
    return summarize_load(answers, [ok for _, ok in bodies], wall_s)


def summarize_load(answers: list[Answer], well_formed: list[bool], wall_s: float) -> dict:
    """Counts per outcome (and whether each kind of body got the outcome it should), throughput,
    and the latency percentiles of the well-formed requests that got a reward."""
    counts = {outcome: sum(a.outcome == outcome for a in answers) for outcome in OUTCOMES}
    rewarded = [a.latency_ms for a, ok in zip(answers, well_formed) if ok and a.outcome == "reward"]
    latencies = np.asarray(rewarded or [np.nan])
    return {
        "requests": len(answers),
        "malformed": well_formed.count(False),
        **counts,
        # a broken body must get its 4xx, a good one its reward (or a 503 it gave up on)
        "malformed_not_4xx": sum(not ok and a.outcome != "error" for a, ok in zip(answers, well_formed)),
        "well_formed_4xx": sum(ok and a.outcome == "error" for a, ok in zip(answers, well_formed)),
        "retried_503": sum(a.retried_503 for a in answers),
        "wall_s": wall_s,
        "throughput_rps": counts["reward"] / wall_s,
        "p50_ms": float(np.percentile(latencies, 50)),
        "p99_ms": float(np.percentile(latencies, 99)),
        "rewards": [a.reward for a in answers],
    }
