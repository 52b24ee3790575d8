"""rmbench-advise on a user's own model folder (rmbench.studies.advise): the fastest runtime named
is the fastest by the launches it ran, a runtime that cannot run is a row with its reason, and
the service line it prints starts and answers OpenRLHF's /get_reward."""

import json
import os
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, needs, snakemake


def advise(model, rows: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "rmbench.studies.advise",
        str(model),
        "--rows",
        str(rows),
        "--out",
        str(out),
    ]
    return subprocess.run([*command, *args], capture_output=True, text=True, check=False, timeout=900)


@pytest.fixture(scope="module")
def rows_file(tiny_decoder, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("advise-rows") / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in tiny_decoder["rows"][:6]))
    return path


@pytest.fixture(scope="module")
def advised(tiny_decoder, rows_file, binary, tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("advise") / "out"
    runtimes = ("--runtimes", "ort_python,native", "--cap", "3")  # 3 launches each: the fewest it runs
    run = advise(tiny_decoder["model"], rows_file, out, *runtimes, "--binary", str(binary))
    assert run.returncode == 0, run.stdout + run.stderr
    return out, run.stdout


def test_the_fastest_named_is_the_fastest_by_the_launches_it_ran(advised):
    out, printed = advised
    advice = json.loads((out / "advice.json").read_text())
    threads = advice["cpu_threads"]  # the comparison's launches, on every usable core
    records = [
        json.loads(p.read_text())
        for p in (out / "launches").glob(f"*+set~user+threads~{threads}+launch~*.json")
    ]
    records = [r for r in records if "status" in r and r["cell"]["study"] == "latency"]
    p50 = {}
    for r in records:
        assert r["status"] == "ok", r.get("reason")
        p50.setdefault(r["cell"]["runtime"], []).append(r["metrics"]["p50_ms"])
    assert set(p50) == {"ort_python", "native"} and all(len(v) == 3 for v in p50.values())
    assert advice["fastest"] == min(p50, key=lambda name: np.mean(p50[name]))
    assert advice["runner_up"] == max(p50, key=lambda name: np.mean(p50[name]))
    assert isinstance(advice["lead_settled"], bool)
    # each reply and its rejected one scored as PyTorch scores them, in the same order
    for row in advice["runtimes"]:
        assert row["max_abs_score_diff"] <= 1e-4 and row["preference_agreement"] == 1.0
    assert advice["rows"] == 12 and advice["rows_cut"] is None  # 6 rows, each with its rejected reply
    assert advice["best_batching"] in [b["batching"] for b in advice["batching"]]
    if threads > 1:  # one thread against them all: more threads are advised only where they pay
        compared = advice["threads"]
        assert compared["best"] == (threads if compared["verdict"].endswith("faster than 1") else 1)
        assert f"--threads {compared['best']}" in advice["serve"]
    assert f"Fastest: {advice['fastest']}" in (out / "advice.md").read_text()
    assert "budget 20 min" in printed and "s left)" in printed  # said up front, then per launch


def test_the_rows_kept_are_the_most_whose_two_rounds_fit_the_budget():
    from rmbench.studies.advise import MIN_ROWS, ROUNDS_SHARE, comparison_seconds, replies_within_budget

    # 30 rows of a chosen and a rejected reply, of the embedded rows' spread of lengths; a
    # Qwen3-0.6B-sized model on 2 cores (11 ms a token), six runtimes, one warm-up row, 20 minutes
    tokens = [431, 449, 635, 413, 93, 107, 280, 299, 218, 215] * 6
    ends = list(range(2, 61, 2))
    keep = replies_within_budget(tokens, ends, 0.011, 6, 1, 1200)
    assert keep in ends and 2 * MIN_ROWS <= keep < 60
    assert comparison_seconds(tokens[:keep], 0.011, 6, 1) <= ROUNDS_SHARE * 1200
    assert comparison_seconds(tokens[: keep + 2], 0.011, 6, 1) > ROUNDS_SHARE * 1200
    # whole rows only: with a rejected reply to each, an odd count is never kept
    assert replies_within_budget(tokens, ends, 0.004, 6, 1, 1200) % 2 == 0
    # a fast model keeps every row; a budget too small for the fewest keeps MIN_ROWS rows
    assert replies_within_budget(tokens, ends, 1e-5, 6, 1, 1200) == 60
    assert replies_within_budget(tokens, ends, 0.011, 6, 1, 1) == 2 * MIN_ROWS
    # rows without a rejected reply: one reply each
    assert replies_within_budget(tokens[:30], list(range(1, 31)), 0.011, 6, 1, 1) == MIN_ROWS


def test_more_threads_are_advised_only_where_they_beat_the_count_advised_so_far():
    from rmbench.stats.across_launches import t_interval
    from rmbench.studies.advise import advised_threads, thread_counts

    assert [thread_counts(n) for n in (1, 2, 3, 8, 12)] == [
        [1],
        [1, 2],
        [1, 2, 3],
        [1, 2, 4, 8],
        [1, 2, 4, 8, 12],
    ]
    # per-row p50 of three launches at each count: 2 beats 1; 4 is not told from 2; 8 beats 2
    # (the count advised so far, not its neighbour 4); 12 is slower than 8
    launches = {1: [100, 101, 99], 2: [60, 61, 59], 4: [57, 63, 60], 8: [40, 41, 39], 12: [45, 46, 44]}
    best, steps = advised_threads({n: t_interval(p50) for n, p50 in launches.items()})
    assert best == 8
    assert steps == [
        "2 threads are faster than 1",
        "4 threads and 2 are not told apart",
        "8 threads are faster than 2",
        "12 threads are slower than 8",
    ]
    # none pays: one thread, which leaves the other cores to the trainer
    assert advised_threads({1: t_interval([50, 51, 49]), 2: t_interval([48, 55, 50])})[0] == 1


def test_a_runtime_that_cannot_run_is_a_row_with_its_reason(tiny_decoder, rows_file, tmp_path):
    run = advise(
        tiny_decoder["model"], rows_file, tmp_path, "--runtimes", "native", "--binary", "/nowhere/rmscore"
    )
    assert run.returncode == 0, run.stdout + run.stderr
    advice = json.loads((tmp_path / "advice.json").read_text())
    assert advice["fastest"] is None and advice["runtimes"][0]["status"] == "refused"
    assert "the native engine is not built" in advice["runtimes"][0]["reason"]
    assert "No runtime scored the model" in (tmp_path / "advice.md").read_text()


def test_what_the_budget_left_out_is_said(tiny_decoder, rows_file, tmp_path):
    """Two rounds always run; past them a spent budget stops the comparison, and the advice says
    which steps it did not reach instead of leaving them out silently."""
    run = advise(
        tiny_decoder["model"], rows_file, tmp_path, "--runtimes", "ort_python", "--budget-min", "0.01"
    )
    assert run.returncode == 0, run.stdout + run.stderr
    advice = json.loads((tmp_path / "advice.json").read_text())
    assert [row["launches"] for row in advice["runtimes"]] == [2]
    assert "round 2 runs past the time budget" in run.stdout  # said, not overrun silently
    # the rows were cut to the fewest, and the advice says so and what all of them would need
    assert advice["rows_cut"]["rows"] == 4 and advice["rows_cut"]["of"] == 6 and advice["rows"] == 8
    assert f"--budget-min {advice['rows_cut']['budget_min_for_all']}" in (tmp_path / "advice.md").read_text()
    assert advice["batching"] == [] and "would not fit in the time budget left" in advice["batching_reason"]
    text = (tmp_path / "advice.md").read_text()
    assert f"Batching: {advice['batching_reason']}." in text
    if advice["cpu_threads"] > 1:
        assert (
            "would not fit in the time budget left" in advice["threads"]["reason"]
            and advice["threads"]["reason"] in text
        )


def test_an_unknown_architecture_is_refused_naming_the_known_families(tmp_path, rows_file):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(
        json.dumps({"architectures": ["GPT2ForSequenceClassification"]})
    )
    run = advise(tmp_path / "model", rows_file, tmp_path / "out")
    assert run.returncode != 0
    assert "GPT2ForSequenceClassification is none of the declared families' classes" in run.stderr
    assert "Qwen3ForSequenceClassification" in run.stderr and not (tmp_path / "out" / "advice.json").exists()


def test_a_rows_file_without_rows_is_refused_with_its_name(tiny_decoder, tmp_path):
    empty = tmp_path / "rows.jsonl"
    empty.write_text("")
    run = advise(tiny_decoder["model"], empty, tmp_path / "out")
    assert run.returncode != 0 and f"{empty} holds no rows" in run.stderr
    assert not (tmp_path / "out" / "advice.json").exists()


def dry_run_jobs(*args: str) -> list[str]:
    run = snakemake(ROOT, "-n", *args, profile="default", cores=1)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = (line.strip() for line in run.stdout.splitlines())
    return sorted(line for line in lines if line.startswith(("rule ", "localrule ", "output: ")))


def test_the_advise_target_leaves_the_default_runs_jobs_alone(tiny_decoder):
    """`--config rm=...` changes no job of `all`: default, advise, default reruns nothing."""
    rm = f"rm={tiny_decoder['model']}"
    assert dry_run_jobs("all", "--config", rm) == dry_run_jobs("all")
    assert "rule advise:" in dry_run_jobs("advise", "--config", rm)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_printed_service_line_starts_and_answers_get_reward(advised):
    import requests

    out, _ = advised
    advice = json.loads((out / "advice.json").read_text())
    command = shlex.split(advice["serve"])
    executable = Path(sys.executable).parent / command[0]
    needs(executable.exists(), "rmbench is not installed in this venv: bash envs/setup.sh installs it")
    port = free_port()
    command[command.index("--port") + 1] = str(port)
    server = subprocess.Popen([str(executable), *command[1:]], start_new_session=True)
    try:
        url = advice["trainer_url"].replace(":5000/", f":{port}/")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if requests.get(url.replace("/get_reward", "/health"), timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                time.sleep(0.5)
        assert server.poll() is None, "the advised service exited"
        query = "\n\nHuman: What is 2+2?\n\nAssistant: 4."
        answer = requests.post(url, json={"query": [query]}, timeout=60)
        assert answer.status_code == 200 and len(answer.json()["rewards"]) == 1, answer.text
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=60)
