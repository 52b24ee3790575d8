"""torch.compile and the FastAPI service on a tiny real model: scores, what they record, and a
service that validates its input, survives bad clients and never outlives its launch."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, loaded_runtime
from rmbench.export.onnx import reference_scores
from rmbench.models.build import encode, load_tokenizer, without_torch
from rmbench.runtimes import runtime_class, spare_torch_import
from rmbench.runtimes.fastapi_service import FastAPIRuntime, ServiceError
from rmbench.runtimes.ort_python import OrtPythonRuntime
from rmbench.service.app import STOPPED
from rmbench.studies.launch import run_launch

SETTINGS = {"threads": 1, "warmup_rows": 1, "timeout_s": 900, "max_length": 512, "tolerance": 1e-4}


@pytest.fixture(scope="module")
def reference(tiny_model):
    return reference_scores(tiny_model["model"], tiny_model["rows"], threads=1)


def launch(tiny_model, reference, runtime, rows=None, **options):
    rows = rows or len(tiny_model["rows"])
    cell = {
        "study": "latency",
        "model": "tiny",
        "device": "cpu",
        "runtime": runtime,
        "params": "set~t",
        "launch": 1,
    }
    return run_launch(
        cell, tiny_model["rows"][:rows], reference[:rows], tiny_model["model"], None, SETTINGS, options
    )


def alive(pid: int) -> bool:
    """Running (a zombie nobody has reaped yet counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_torch_compile_records_recompiles_and_a_warm_cache(tiny_model, reference, tmp_path):
    tokenizer = load_tokenizer(tiny_model["model"])
    lengths = {
        len(encode(tokenizer, [(r["prompt"], r["response"])], "np")["input_ids"][0])
        for r in tiny_model["rows"][:2]
    }
    assert len(lengths) == 2  # two distinct lengths: dynamic=false must compile for each
    options = {"dynamic": "false", "bucket": "0", "cache": "warm", "cache_root": str(tmp_path)}
    cold = launch(tiny_model, reference, "torch_compile", rows=2, **options)
    assert cold["status"] == "ok", cold["reason"]
    m = cold["metrics"]
    assert m["cache_warm"] == 0 and m["first_call_s"] > 0 and m["graph_breaks"] == 0
    # the warm-up row compiled once; timed row 1 repeats its length, row 2 is new
    assert m["compiles"] == 2 and m["recompiles"] == 1 and m["miss_rows"] == 1
    assert m["row_compiled"] == [0, 1] and m["fxgraph_cache_misses"] >= 2
    warm = launch(tiny_model, reference, "torch_compile", rows=2, **options)
    assert warm["metrics"]["cache_warm"] == 1 and warm["metrics"]["fxgraph_cache_hits"] >= 1
    assert warm["runtime"]["cache_dir"].startswith(str(tmp_path))


def test_torch_compile_bucketing_pads_and_keeps_scores(tiny_model, reference):
    record = launch(
        tiny_model, reference, "torch_compile", rows=4, dynamic="false", bucket="512", cache="cold"
    )
    assert record["status"] == "ok", record["reason"]  # padding to 512 leaves every score as it was
    assert record["metrics"]["compiles"] == 1  # one length reaches the compiler
    assert record["runtime"]["bucket"] == 512


def test_fastapi_launch_scores_and_leaves_no_server(tiny_model, reference):
    record = launch(tiny_model, reference, "fastapi")
    assert record["status"] == "ok", record["reason"]
    m = record["metrics"]
    assert 0 < m["server_p50_ms"] < m["p50_ms"] and m["overhead_p50_ms"] > 0
    assert record["runtime"]["server_runtime"]["name"] == "hf_eager"
    assert not alive(record["runtime"]["server_pid"])


def test_a_launch_can_call_the_reward_endpoint_as_openrlhf_does(tiny_model, reference):
    record = launch(tiny_model, reference, "fastapi", endpoint="get_reward")
    assert record["status"] == "ok", record["reason"]  # the server split each dialogue back
    assert record["runtime"]["endpoint"] == "get_reward" and record["metrics"]["server_p50_ms"] > 0
    with pytest.raises(ValueError, match="endpoint must be one of score, get_reward"):
        launch(tiny_model, reference, "fastapi", endpoint="reward")


def test_a_service_that_cannot_start_fails_the_launch_and_is_gone(tiny_model, reference, tmp_path):
    missing = tmp_path / "no-model"
    runtime = FastAPIRuntime(missing, None, "cpu", 1, 512)
    with pytest.raises(ServiceError, match="exited with code"):
        runtime.load()
    runtime.close()
    assert runtime.server.poll() is not None


@pytest.fixture(scope="module")
def service(tiny_model):
    yield from loaded_runtime(FastAPIRuntime(tiny_model["model"], None, "cpu", 1, 512))


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"pairs": []},
        {"pairs": [{"prompt": "hi"}]},
        {"pairs": [{"prompt": 1, "response": "x"}]},
        {"pairs": [{"prompt": "a", "response": "b", "extra": 1}]},
    ],
)
def test_service_rejects_bad_requests_with_4xx(service, body):
    response = service.client.post("/score", json=body)
    assert response.status_code == 422 and response.json()["detail"]


def test_reward_endpoint_answers_openrlhf_remote_rm_calls(service, tiny_model, reference):
    import requests

    rows = tiny_model["rows"][:3]
    queries = [r["prompt"] + " " + r["response"] for r in rows]  # whole hh-rlhf dialogues
    url = f"http://127.0.0.1:{service.port}/get_reward"

    def remote_rm(data):  # what OpenRLHF's remote reward model client sends and reads
        response = requests.post(
            url=url, json=data, headers={"Content-Type": "application/json"}, timeout=180
        )
        response.raise_for_status()
        assert "rewards" in response.json()
        return response.json()["rewards"]

    assert np.allclose(remote_rm({"query": queries}), reference[:3], atol=1e-4)
    # newer clients send the prompts (and labels) too: the response is what follows the prompt
    prompts = [r["prompt"] for r in rows]
    with_prompts = remote_rm({"query": queries, "prompts": prompts, "labels": ["", "", ""]})
    assert np.allclose(with_prompts, reference[:3], atol=1e-4)


@pytest.mark.parametrize(
    "body, message",
    [
        ({}, "query"),
        ({"query": []}, "query"),
        ({"query": "one string"}, "query"),
        ({"query": [1]}, "query"),
        ({"query": ["no assistant turn"]}, "query 0: dialogue has no"),
        ({"query": ["\n\nHuman: a\n\nAssistant: b"], "prompts": ["x", "y"]}, "2 prompts for 1 queries"),
    ],
)
def test_reward_endpoint_rejects_bad_bodies_with_4xx(service, body, message):
    response = service.client.post("/get_reward", json=body)
    assert response.status_code == 422 and message in str(response.json()["detail"])


def test_service_by_hand_names_what_is_missing(tmp_path):
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "rmbench.service.app",
            "--runtime",
            "ort_python",
            "--model-dir",
            str(tmp_path),
        ],
        check=False,
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONPATH": str(ROOT / "workflow")},
        timeout=120,
    )
    # results/models/<name> -> results/onnx/<name>/model.onnx, the pipeline's export
    expected = f"no ONNX file at {tmp_path.parents[1] / 'onnx' / tmp_path.name / 'model.onnx'}"
    assert run.returncode == 2 and expected in run.stderr


def test_service_rejects_empty_and_oversized_bodies(service):
    assert (
        service.client.post("/score", content=b"", headers={"content-type": "application/json"}).status_code
        == 422
    )
    huge = json.dumps({"pairs": [{"prompt": "x" * (5 << 20), "response": "y"}]})
    response = service.client.post("/score", content=huge, headers={"content-type": "application/json"})
    assert response.status_code == 413


def test_service_survives_a_client_that_disconnects_mid_request(service, tiny_model):
    with socket.create_connection(("127.0.0.1", service.port)) as raw:
        raw.sendall(
            b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"
        )
    row = tiny_model["rows"][0]
    assert len(service.score([(row["prompt"], row["response"])])) == 1
    assert service.client.get("/health").json()["status"] == "ok"


def test_service_stops_cleanly_on_sigterm(tiny_model, tmp_path):
    log = tmp_path / "server.log"
    runtime = FastAPIRuntime(tiny_model["model"], None, "cpu", 1, 512, {"server_log": str(log)})
    runtime.load()
    runtime.close()  # SIGTERM to its process group
    assert runtime.server.returncode in (0, -signal.SIGTERM) and not runtime.killed
    assert STOPPED in log.read_text()


def test_service_exits_when_its_launch_is_killed(tiny_model, tmp_path):
    script = (
        "import sys, time\n"
        f"sys.path.insert(0, {str(ROOT / 'workflow')!r})\n"
        "from rmbench.runtimes.fastapi_service import FastAPIRuntime\n"
        f"r = FastAPIRuntime({str(tiny_model['model'])!r}, None, 'cpu', 1, 512)\n"
        "r.load()\n"
        "print(r.server.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    launch_process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    server_pid = int(launch_process.stdout.readline())
    assert alive(server_pid)
    launch_process.send_signal(signal.SIGKILL)  # no close(), no finally: only the watchdog is left
    launch_process.wait()
    deadline = time.monotonic() + 30
    while alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(server_pid)


@pytest.mark.parametrize(
    "runtime, options, needed",
    [
        ("hf_eager", {}, True),
        ("torch_compile", {}, True),
        ("fastapi", {}, True),  # its service wraps hf_eager
        ("fastapi", {"wraps": "ort_python"}, False),
        ("batching_server", {}, False),  # wraps ort_python
        ("batching_server", {"wraps": "hf_eager"}, True),
        ("ort_python", {}, False),
        ("native", {}, False),
    ],
)
def test_which_launches_need_torch(runtime, options, needed):
    assert runtime_class(runtime).needs_torch(options) is needed


def test_a_service_is_available_where_the_runtime_it_wraps_is():
    """FastAPI checks the device with the runtime it wraps: around ONNX Runtime it needs ORT's
    CUDA provider, not a CUDA build of torch (this machine has neither, so both are skipped, each
    with its own reason)."""
    from rmbench.runtimes.fastapi_service import FastAPIRuntime

    assert FastAPIRuntime.unavailable_reason("cpu") is None
    assert FastAPIRuntime.unavailable_reason("cpu", {"wraps": "ort_python"}) is None
    around_ort = FastAPIRuntime.unavailable_reason("cuda", {"wraps": "ort_python"})
    assert around_ort == runtime_class("ort_python").unavailable_reason("cuda")
    assert "CUDAExecutionProvider" in around_ort
    assert FastAPIRuntime.unavailable_reason("cuda") == runtime_class("hf_eager").unavailable_reason("cuda")


def test_an_ort_launch_without_torch_scores_exactly_as_with_it(tiny_model):
    """run_cell spares ORT launches the PyTorch import (models.without_torch): the tokenizer and
    the scores must not change, and PyTorch must really stay out of the process."""
    pairs = [(r["prompt"], r["response"]) for r in tiny_model["rows"]]
    args = (str(tiny_model["model"]), str(tiny_model["onnx"]), "cpu", 1, 512)
    script = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT / 'workflow')!r})\n"
        "from rmbench.models.build import without_torch\n"
        "without_torch()\n"
        "from rmbench.runtimes.ort_python import OrtPythonRuntime\n"
        f"r = OrtPythonRuntime(*{args!r})\n"
        "r.load()\n"
        f"scores = [r.score([p])[0] for p in {pairs!r}]\n"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'scores': scores}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    alone = json.loads(done.stdout.splitlines()[-1])
    with_torch = OrtPythonRuntime(*args)
    with_torch.load()
    assert not alone["torch"]
    assert alone["scores"] == [with_torch.score([p])[0] for p in pairs]


def test_without_torch_refuses_once_transformers_is_imported():
    import transformers  # noqa: F401

    with pytest.raises(RuntimeError, match="before transformers is imported"):
        without_torch()
    # so (transformers being imported here) spare_torch_import shows when it asks for it
    spare_torch_import("hf_eager", "cpu", {})
    spare_torch_import("ort_python", "cuda", {})
    with pytest.raises(RuntimeError, match="before transformers is imported"):
        spare_torch_import("ort_python", "cpu", {})
