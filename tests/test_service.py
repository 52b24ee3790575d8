"""The reward service as a trainer uses it, on a tiny real model: every bad input a 4xx naming
its field (a property test throws arbitrary JSON, text and bytes at it), a chunked body stopped
at the limit, overload answered with Retry-After and 504, OpenRLHF's client pattern under load with
no request lost, and an API key off loopback."""

import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest
import requests
from conftest import loaded_runtime, needs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rmbench.export.onnx import reference_scores
from rmbench.runtimes import runtime_class
from rmbench.runtimes.fastapi_service import FastAPIRuntime
from rmbench.service.app import API_KEY_VARIABLE, Limits, create_app, parse_args
from rmbench.studies.load import run_load


class DefaultService(FastAPIRuntime):
    """The service as `python -m rmbench.service.app` starts it: its own defaults (micro-batching
    with the adaptive cost model), not the latency study's one request at a time."""

    def serving_args(self) -> list[str]:
        return list(self.options.get("serving_args", []))


@pytest.fixture(scope="module")
def reference(tiny_model):
    return reference_scores(tiny_model["model"], tiny_model["rows"], threads=1)


@pytest.fixture(scope="module")
def served(tiny_model):
    yield from loaded_runtime(DefaultService(tiny_model["model"], None, "cpu", 1, 512))


def dialogues(rows) -> list[str]:
    return [row["prompt"] + " " + row["response"] for row in rows]


def post_json(service, endpoint: str, body) -> httpx.Response:
    # json.dumps escapes lone surrogates ("\ud800"), as a client in any language may send them
    return service.client.post(
        endpoint, content=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )


@pytest.mark.parametrize(
    "endpoint, body, field, message",
    [
        ("/score", {"pairs": [{"prompt": "\ud800", "response": "x"}]}, "prompt", "lone surrogate U+D800"),
        ("/get_reward", {"query": ["\n\nHuman: a\n\nAssistant: \udfff"]}, "query", "lone surrogate U+DFFF"),
        (
            "/get_reward",
            {"query": ["\n\nHuman: a\n\nAssistant: b"], "prompts": ["\ud83d"]},
            "prompts",
            "surrogate",
        ),
        ("/score", {"pairs": [{"prompt": "a", "response": "b"}] * 257}, "pairs", "at most 256"),
        ("/get_reward", {"query": ["\n\nHuman: a\n\nAssistant: b"] * 257}, "query", "at most 256"),
        (
            "/get_reward",
            {"query": ["\n\nHuman: a\n\nAssistant: b"], "labels": ["x", "y"]},
            "labels",
            "2 labels",
        ),
        ("/get_reward", {"query": [["nested"]]}, "query", "string"),
        ("/score", {"pairs": [{"prompt": "a", "response": None}]}, "response", "string"),
    ],
)
def test_every_bad_body_is_a_4xx_naming_its_field(served, endpoint, body, field, message):
    response = post_json(served, endpoint, body)
    assert response.status_code == 422, response.text
    assert field in response.text and message in response.text


def test_bodies_that_are_not_json_are_4xx(served):
    for content in (
        b"\xff\xfe not utf-8",
        b"{not json",
        b"",
        b"[1, 2",
        "\ud800".encode("utf-8", "surrogatepass"),
    ):
        for endpoint in ("/score", "/get_reward"):
            response = served.client.post(
                endpoint, content=content, headers={"content-type": "application/json"}
            )
            assert 400 <= response.status_code < 500, (content, response.text)


def test_labels_and_prompts_are_accepted_and_every_reward_field_answered(served, tiny_model, reference):
    rows = tiny_model["rows"][:2]
    body = {"query": dialogues(rows), "prompts": [r["prompt"] for r in rows], "labels": [None, {"any": 1}]}
    answer = post_json(served, "/get_reward", body).json()
    assert np.allclose(answer["rewards"], reference[:2], atol=1e-4)
    assert answer["scores"] == answer["rewards"] and len(answer["extra_logs"]["server_ms"]) == 2


def test_a_chunked_body_over_the_limit_is_413_as_soon_as_it_passes(served):
    limit, chunk, most = Limits().max_body_bytes, b"x" * (64 << 10), 64 << 20
    sent, reply = 0, b""
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as raw:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 10)  # what is sent is near what is read
        raw.sendall(
            b"POST /get_reward HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, TimeoutError):
            while sent < most and not select.select([raw], [], [], 0)[0]:
                raw.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                sent += len(chunk)
        with contextlib.suppress(ConnectionResetError):
            reply = raw.recv(4096)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    # answered near the limit (the server's receive buffer holds a few MiB more), not after 64 MiB
    assert sent < limit + (8 << 20), sent
    assert served.client.get("/health").json()["status"] == "ok"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
# Any code point, lone surrogates included (hypothesis leaves them out unless asked).
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=120)
DIALOGUE = st.builds(lambda h, a: f"\n\nHuman: {h}\n\nAssistant: {a}", ANY_TEXT, ANY_TEXT)
REWARD_BODY = st.fixed_dictionaries(
    {"query": st.lists(DIALOGUE | ANY_TEXT, max_size=4)},
    optional={"prompts": st.lists(ANY_TEXT, max_size=4), "labels": JSON},
)
SCORE_BODY = st.fixed_dictionaries(
    {"pairs": st.lists(st.fixed_dictionaries({"prompt": ANY_TEXT, "response": ANY_TEXT}), max_size=4)}
)


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=REWARD_BODY | SCORE_BODY | JSON, raw=st.binary(max_size=200), as_bytes=st.booleans())
def test_arbitrary_json_text_and_bytes_get_only_2xx_or_4xx(served, body, raw, as_bytes):
    content = raw if as_bytes else json.dumps(body).encode()
    for endpoint in ("/score", "/get_reward"):
        response = served.client.post(endpoint, content=content, headers={"content-type": "application/json"})
        assert response.status_code < 500, (endpoint, content[:300], response.text[:300])
    assert served.client.get("/health").json()["status"] == "ok"


def test_openrlhf_clients_one_sample_per_post_lose_nothing(served, tiny_model, reference):
    queries = dialogues(tiny_model["rows"])
    url = f"http://127.0.0.1:{served.port}/get_reward"
    result = run_load(url, queries, clients=16, requests=4 * len(queries), timeout_s=60, tries=5)
    assert result["reward"] == result["requests"] and result["lost"] == 0
    expected = np.tile(reference, 4)
    assert np.allclose(result["rewards"], expected, atol=1e-4)  # each client its own sample's reward
    health = served.client.get("/health").json()
    assert health["batching"]["rows"] >= result["requests"]  # scored by the default micro-batcher
    assert health["queue"]["admitted"] == 0 and health["queue"]["limit"] == Limits().queue_size


def test_malformed_requests_under_load_get_their_4xx_and_good_ones_their_reward(served, tiny_model):
    url = f"http://127.0.0.1:{served.port}/get_reward"
    result = run_load(url, dialogues(tiny_model["rows"]), clients=8, requests=80, malformed_share=0.3, seed=3)
    assert result["malformed"] > 0 and result["malformed_not_4xx"] == 0 and result["well_formed_4xx"] == 0
    assert (
        result["error"] == result["malformed"]
        and result["reward"] == result["requests"] - result["malformed"]
    )


@contextlib.contextmanager
def serving(app):
    """`app` under uvicorn in a thread, on a free loopback port: its base URL."""
    import uvicorn

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)


class SlowEngine:
    """A real runtime that takes `delay_s` longer per call: a request behind it waits."""

    def __init__(self, runtime, delay_s: float):
        self.runtime, self.delay_s = runtime, delay_s

    def score(self, pairs):
        time.sleep(self.delay_s)
        return self.runtime.score(pairs)

    def __getattr__(self, name):  # the rest as the runtime has it (its folder, its row check)
        return getattr(self.runtime, name)

    def close(self):
        pass


@pytest.fixture(scope="module")
def engine(tiny_model):
    yield from loaded_runtime(runtime_class("hf_eager")(tiny_model["model"], None, "cpu", 1, 512))


def test_overload_answers_503_with_retry_after_and_a_long_wait_504(engine, tiny_model):
    body = {"query": dialogues(tiny_model["rows"][:1])}
    # one scored (1.5 s), one waiting for it (504 at 0.8 s), four refused: all six arrive well
    # within the 0.8 s before the 504 frees a place
    app = create_app(SlowEngine(engine, 1.5), None, Limits(queue_size=2, request_timeout_s=0.8))
    with serving(app) as url, ThreadPoolExecutor(6) as pool:
        answers = list(
            pool.map(lambda _: requests.post(f"{url}/get_reward", json=body, timeout=30), range(6))
        )
        codes = sorted(a.status_code for a in answers)
        # OpenRLHF's client comes back after Retry-After, and is answered
        result = run_load(f"{url}/get_reward", body["query"], clients=1, requests=1)
    assert codes.count(200) == 1 and codes.count(504) == 1 and codes.count(503) == 4, codes
    assert all(int(a.headers["Retry-After"]) >= 1 for a in answers if a.status_code == 503)
    assert result["reward"] == 1


def test_an_api_key_is_checked_as_a_bearer_token(engine, tiny_model):
    body = {"query": dialogues(tiny_model["rows"][:1])}
    with serving(create_app(engine, None, api_key="s3cret")) as url:
        missing = requests.post(f"{url}/get_reward", json=body, timeout=30)
        wrong = requests.post(
            f"{url}/get_reward", json=body, headers={"Authorization": "Bearer no"}, timeout=30
        )
        right = requests.post(
            f"{url}/get_reward", json=body, headers={"Authorization": "Bearer s3cret"}, timeout=30
        )
        loaded = run_load(
            f"{url}/get_reward", body["query"], 2, 4, headers={"Authorization": "Bearer s3cret"}
        )
        # OpenRLHF's client posts to its --remote_rm_url as given, with no headers of its own
        in_url = run_load(f"{url}/get_reward?key=s3cret", body["query"], 2, 4)
        wrong_in_url = requests.post(f"{url}/get_reward?key=no", json=body, timeout=30)
    assert missing.status_code == wrong.status_code == 401 and missing.headers["WWW-Authenticate"] == "Bearer"
    assert "Authorization: Bearer" in missing.json()["detail"]
    assert right.status_code == 200 and loaded["reward"] == 4
    assert in_url["reward"] == 4 and wrong_in_url.status_code == 401


def test_a_public_address_without_a_key_is_refused(tiny_model, monkeypatch, capsys):
    monkeypatch.delenv(API_KEY_VARIABLE, raising=False)
    model = ["--model-dir", str(tiny_model["model"])]
    with pytest.raises(SystemExit) as stopped:
        parse_args([*model, "--host", "0.0.0.0"])
    assert stopped.value.code == 2 and API_KEY_VARIABLE in capsys.readouterr().err
    assert parse_args([*model, "--host", "0.0.0.0", "--api-key", "k"]).api_key == "k"
    monkeypatch.setenv(API_KEY_VARIABLE, "from-env")
    assert parse_args([*model, "--host", "0.0.0.0"]).api_key == "from-env"
    assert parse_args([*model, "--host", "::1"]).microbatch == "length_aware"  # loopback needs none


def test_a_load_launch_records_every_outcome_and_checks_its_scores(tiny_model, reference):
    from rmbench.studies.launch import run_launch

    params = {"clients": "6", "requests": "30", "malformed": "0.25"}
    cell = {"study": "load", "model": "tiny", "device": "cpu", "runtime": "batching_server", "launch": 1}
    cell["params"] = "set~t+" + "+".join(f"{k}~{v}" for k, v in params.items())
    settings = {"threads": 1, "warmup_rows": 1, "timeout_s": 600, "max_length": 512, "tolerance": 1e-4}
    record = run_launch(
        cell, tiny_model["rows"], reference, tiny_model["model"], tiny_model["onnx"], settings, params
    )
    assert record["status"] == "ok", record["reason"]
    m = record["metrics"]
    assert m["requests"] == 30 and m["lost"] == 0 and m["reward"] + m["error"] == 30
    assert m["malformed"] == m["error"] > 0 and m["malformed_not_4xx"] == 0
    assert m["max_abs_err"] <= 1e-4 and m["reward_spread"] <= 1e-4 and m["row_ms"] > 0
    assert m["server_rows"] >= m["reward"]  # the micro-batcher scored them


@pytest.mark.parametrize("body", ["openrlhf", "verl"])
def test_a_load_launch_sends_a_trainers_own_bodies(tiny_decoder, body):
    """OpenRLHF's templated /get_reward bodies and verl's /classify ones under load, malformed
    ones of the same endpoint among them: each row's reward is the model's score of its dialogue."""
    from rmbench.export.onnx import reference_scores
    from rmbench.studies.launch import run_launch

    rows = tiny_decoder["rows"]
    params = {"clients": "4", "requests": "20", "malformed": "0.2", "body": body}
    cell = {
        "study": "load",
        "model": "tiny_qwen3",
        "device": "cpu",
        "runtime": "batching_server",
        "launch": 1,
    }
    cell["params"] = "set~q+" + "+".join(f"{k}~{v}" for k, v in params.items())
    settings = {"threads": 1, "warmup_rows": 1, "timeout_s": 600, "max_length": 512, "tolerance": 1e-4}
    reference = reference_scores(tiny_decoder["model"], rows, threads=1)
    record = run_launch(cell, rows, reference, tiny_decoder["model"], tiny_decoder["onnx"], settings, params)
    assert record["status"] == "ok", record["reason"]
    m = record["metrics"]
    assert m["requests"] == 20 and m["lost"] == 0 and m["malformed"] == m["error"] == 4
    assert m["malformed_not_4xx"] == 0 and m["well_formed_4xx"] == 0 and m["reward"] == 16
    assert m["max_abs_err"] <= 1e-4 and m["reward_spread"] <= 1e-4


def test_an_encoder_gets_no_templated_trainer_bodies(tiny_model):
    from rmbench.models.families import family_of_folder
    from rmbench.runtimes import runtime_class

    declared = family_of_folder(tiny_model["model"])
    for runtime in ("batching_server", "fastapi"):
        reason = runtime_class(runtime).family_reason(declared, {"body": "verl"})
        assert "has no chat template: verl's bodies are templated with it" in reason
        assert runtime_class(runtime).family_reason(declared, {"body": "hh"}) is None


def test_the_service_starts_by_its_own_name_without_pythonpath(tmp_path):
    """Setup installs rmbench into the venv (editable): `rmbench-serve` runs from any folder."""
    command = Path(sys.executable).parent / "rmbench-serve"
    needs(command.exists(), "rmbench is not installed in this venv: bash envs/setup.sh installs it")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    shown = subprocess.run(
        [command, "--help"], cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("usage: rmbench-serve") and "--runtime" in shown.stdout
