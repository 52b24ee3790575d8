"""The co-location study: the rollout generator, core splits, and a launch beside it."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT
from rmbench.export.onnx import reference_scores
from rmbench.models.generator import build_generator
from rmbench.studies.colocation import Generator, core_split, pin_tree, split_threads
from rmbench.studies.launch import run_launch

GENERATOR = {
    "tokenizer": "tiny",
    "layers": 1,
    "hidden_size": 32,
    "num_attention_heads": 2,
    "prompt_tokens": 48,
    "new_tokens": 5,
    "queue": 2,
    "seed": 11,
}
SETTINGS = {"threads": 2, "warmup_rows": 1, "timeout_s": 600, "max_length": 512, "tolerance": 1e-4}


@pytest.fixture(scope="module")
def generator(tiny_model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("generator") / "generator"
    build_generator(GENERATOR, tiny_model["model"], folder)  # the scorer's folder holds its tokenizer
    return GENERATOR | {"model_dir": str(folder)}


@pytest.fixture(scope="module")
def reference(tiny_model):
    return reference_scores(tiny_model["model"], tiny_model["rows"], threads=1)


def test_the_generator_writes_the_same_greedy_replies_of_a_fixed_length(tiny_model, generator):
    prompts = [r["prompt"] for r in tiny_model["rows"][:3]]
    arrived = []
    process = Generator(generator, prompts, [0], 1, 2, passes=2)  # as a launch runs steps 1 and 3
    try:
        replies, summary = process.run(lambda i, reply: arrived.append(i))
        # the first pass's takes its queue never read are still in the pipe: the second drops them
        again, _ = process.run()
    finally:
        process.close()
    assert arrived == [0, 1, 2] and all(replies)  # each handed over as it was made, in order
    assert summary["new_tokens"] == 3 * generator["new_tokens"] and summary["wall_s"] > 0
    assert again == replies
    assert process.process.returncode == 0  # it had made both passes and exited


def test_the_generator_runs_pytorch_beside_a_scorer_process_without_it(tiny_model, generator, monkeypatch):
    monkeypatch.setenv("USE_TORCH", "0")  # what ORT-Python and native launches set (spare_torch_import)
    process = Generator(generator, [tiny_model["rows"][0]["prompt"]], [0], 1, 1)
    try:
        replies, summary = process.run()
    finally:
        process.close()
    assert replies[0] and summary["new_tokens"] == generator["new_tokens"]


def test_core_splits():
    assert core_split("shared", [0, 1]) == ([0, 1], [0, 1])
    assert core_split("separate", [0, 1, 2, 3]) == ([1], [0])  # the scorer, then the generator
    assert (split_threads("separate", 4), split_threads("shared", 4)) == (1, 4)
    with pytest.raises(ValueError, match="needs 2 cores"):
        core_split("separate", [0])
    with pytest.raises(ValueError, match="split must be one of shared, separate"):
        core_split("half", [0, 1])


# The smoke run's launches are hf_eager's and ort_python's on separate cores (test_pipeline).
@pytest.mark.parametrize(("runtime", "split"), [("ort_python", "shared"), ("native", "separate")])
def test_a_colocation_launch_scores_beside_the_generator(
    tiny_model, reference, generator, runtime, split, request
):
    if split == "separate" and len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core: nothing to split")
    cell = {"study": "colocation", "model": "tiny", "device": "cpu", "runtime": runtime}
    cell |= {"params": f"set~t+split~{split}", "launch": 1}
    rows = tiny_model["rows"][:4]
    settings = SETTINGS | {"generator": generator}
    options = {"split": split}
    if runtime == "native":  # one resident engine process, pinned with its parent
        options["binary"] = str(request.getfixturevalue("binary"))
    before = os.sched_getaffinity(0)
    record = run_launch(cell, rows, reference[:4], tiny_model["model"], tiny_model["onnx"], settings, options)
    assert os.sched_getaffinity(0) == before  # its cores back: the record's host names them all
    assert record["status"] == "ok", record["reason"]
    m = record["metrics"]
    assert m["score_drift"] <= 1e-4  # the same replies score the same beside the generator
    assert m["gen_tokens_per_s_alone"] > 0 and m["gen_slowdown"] > 0 and m["score_slowdown"] > 0
    assert m["e2e_row_ms"] == pytest.approx(1e3 / m["e2e_rows_per_s"])
    assert m["generated_tokens"] == 4 * generator["new_tokens"]
    if split == "separate":
        assert set(m["scorer_cores"]).isdisjoint(m["generator_cores"]) and m["generator_threads"] == 1
        assert record["runtime"]["threads"] == 1  # one thread on its one core
    else:
        assert m["scorer_cores"] == m["generator_cores"] and record["runtime"]["threads"] == 2


def test_the_generator_names_what_is_missing(tmp_path):
    prompts = tmp_path / "p.json"
    prompts.write_text('["hi"]')
    run = subprocess.run(
        [sys.executable, "-m", "rmbench.models.generator", "--model-dir", str(tmp_path / "none")]
        + ["--prompts", str(prompts), "--new-tokens", "2"],
        check=False,
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONPATH": str(ROOT / "workflow")},
        timeout=120,
    )
    assert run.returncode == 2 and "no generator at" in run.stderr


# Where OpenVINO's threads may run after a call, once a co-location split has pinned the loaded
# scorer's process to its last core (as the study does).
OPENVINO_THREADS = """
import json, os, sys, threading
from pathlib import Path
from rmbench.studies.colocation import pin_tree
from rmbench.runtimes import runtime_class

model, onnx, pinning = sys.argv[1:]
runtime = runtime_class("openvino")(model, onnx, "cpu", 1, 512, {"cpu_pinning": pinning})
runtime.load()
core = max(os.sched_getaffinity(0))
pin_tree(os.getpid(), [core])
seen = set()
scoring = threading.Thread(target=lambda: [runtime.score([("Human: Hi.", "Hello!")]) for _ in range(300)] and None)
scoring.start()
while scoring.is_alive():  # OpenVINO may pin a thread only while it runs a request
    for task in Path("/proc/self/task").iterdir():
        try:
            seen.add(tuple(sorted(os.sched_getaffinity(int(task.name)))))
        except ProcessLookupError:
            pass
print(json.dumps({"core": core, "threads": sorted(seen), "recorded": runtime.describe()}))
"""


def openvino_thread_cores(tiny_model, pinning: str) -> dict:
    run = subprocess.run(
        [sys.executable, "-c", OPENVINO_THREADS, tiny_model["model"], str(tiny_model["onnx"]), pinning],
        check=True,
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONPATH": str(ROOT / "workflow")},
        timeout=120,
    )
    return json.loads(run.stdout.splitlines()[-1])


def test_openvino_without_its_pinning_binds_no_thread_away_from_the_cores_a_split_gives_it(tiny_model):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core: nothing to split")
    # OpenVINO's own pinning binds a thread to a core the process was not given (the generator's)
    pinned = openvino_thread_cores(tiny_model, "on")
    assert pinned["recorded"]["enable_cpu_pinning"] is True
    assert any(pinned["core"] not in cores for cores in pinned["threads"])
    kept = openvino_thread_cores(tiny_model, "off")
    assert kept["recorded"]["enable_cpu_pinning"] is False
    assert all(kept["core"] in cores for cores in kept["threads"])


def test_pinning_a_process_leaves_a_child_in_a_group_of_its_own_alone():
    """A co-location launch pins its own tree (the native engine in its group); a test session's
    background smoke run, a child in a group of its own, keeps its cores."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("one usable core: nothing to pin away from")
    own, same = subprocess.Popen(["sleep", "30"], start_new_session=True), subprocess.Popen(["sleep", "30"])
    try:
        pin_tree(os.getpid(), cores[:1])
        assert os.sched_getaffinity(same.pid) == set(cores[:1])
        assert os.sched_getaffinity(own.pid) == set(cores)
    finally:
        pin_tree(os.getpid(), cores)
        own.kill()
        same.kill()
