"""What a user does when a run breaks: resume a killed run, rerun a failed cell by naming its file.
Both on a slice of the pipeline that reuses the smoke run's data, models, exports, gates and build,
run in a thread as soon as the smoke run has made them (start_after_smoke), beside the rest of it;
the tests then check what each scenario saw."""

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import crashing_engine, outcome, scenario_outcomes, snakemake, user_env

EAGER = "results/cells/latency/electra/cpu/hf_eager/set~main60"
NATIVE_CELL = "results/cells/latency/electra/cpu/native/set~main60/launch~1.json"


def jobs_run(output: str, rule: str = "cell") -> int:
    """How many jobs of `rule` a Snakemake run started (its log names each once)."""
    return len(re.findall(rf"^(?:local)?rule {rule}:$", output, flags=re.MULTILINE))


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout:g} s for {what}"
        time.sleep(0.05)


def kill_mid_launch_and_resume(workdir) -> dict:
    """kill -9 of Snakemake and its job while the second of two launches runs, then the same
    command (refused until --unlock), --unlock, and the same command again."""
    targets = [f"{EAGER}/launch~{i}.json" for i in (1, 2)]
    command = [sys.executable, "-m", "snakemake", "--workflow-profile", "workflow/profiles/smoke"]
    command += ["--cores", "1", *targets]
    run = subprocess.Popen(
        command,
        cwd=workdir,
        env=user_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        done = lambda: [t for t in targets if (workdir / t).exists()]
        wait_for(lambda: done() or run.poll() is not None, 300, "the first launch")
        assert run.poll() is None and len(done()) == 1, "the run ended before the second launch"
        finished = workdir / done()[0]
        killed = next(t for t in targets if workdir / t != finished)
        log = workdir / killed.replace("results/cells", "results/logs/cells").replace(".json", ".log")
        wait_for(log.exists, 60, "the second launch to start")
        time.sleep(1)  # inside the launch: loading its runtime takes seconds
        assert not (workdir / killed).exists(), "the second launch finished before the kill"
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    before = (finished.stat().st_mtime_ns, digest(finished))
    return {
        "locked": snakemake(workdir, *targets, cores=1),  # the killed run's lock stays (README)
        "unlock": snakemake(workdir, "--unlock", cores=None),
        "resumed": snakemake(workdir, *targets, cores=1),
        "finished_before": before,
        "finished_after": (finished.stat().st_mtime_ns, digest(finished)),
        "killed": workdir / killed,
    }


def fail_and_rerun(workdir) -> dict:
    """A launch whose engine crashes, then the same launch named again once the cause is gone."""
    with crashing_engine(workdir):
        failed = snakemake(workdir, NATIVE_CELL, cores=1)
    log = (workdir / "results/logs/cells/latency/electra/cpu/native/set~main60/launch~1.log").read_text()
    left = (workdir / NATIVE_CELL).exists()
    rerun = snakemake(workdir, NATIVE_CELL, cores=1)  # writes the log anew
    return {
        "failed": failed,
        "log": log,
        "left": left,
        "rerun": rerun,
        "cell": workdir / NATIVE_CELL,
    }


SCENARIOS = {"kill": kill_mid_launch_and_resume, "fail": fail_and_rerun}


# What the scenarios reuse from the smoke run (conftest makes these first), and their copies.
SMOKE_NEEDS = [f"{EAGER}/launch~1.json", NATIVE_CELL]
SMOKE_COPIES = tuple(SCENARIOS)


def start_after_smoke(copies: dict[str, Path]) -> dict:
    """conftest runs this in a thread once the smoke run has made SMOKE_NEEDS, beside the rest of
    it: each scenario on its own copy of the repository (reusing the smoke run's inputs and build)."""
    return scenario_outcomes(SCENARIOS, lambda name: copies[name])


def test_a_run_killed_mid_launch_resumes_keeping_the_finished_launches(followed):
    """After --unlock, the same command reruns the killed launch alone and leaves the finished one
    untouched."""
    seen = outcome(followed, "kill")
    locked = seen["locked"]
    assert locked.returncode != 0 and "--unlock" in locked.stdout + locked.stderr
    assert seen["unlock"].returncode == 0
    output = seen["resumed"].stdout + seen["resumed"].stderr
    assert seen["resumed"].returncode == 0, output[-3000:]
    assert jobs_run(output) == 1  # the killed launch, nothing else
    assert seen["finished_after"] == seen["finished_before"]
    assert json.loads(seen["killed"].read_text())["status"] == "ok"


def test_a_failed_cell_reruns_alone_by_naming_its_file(followed):
    """README, "Rerun one cell": a launch that failed (its engine crashed) reruns by name, as the
    only job, once the cause is gone."""
    seen = outcome(followed, "fail")
    assert seen["failed"].returncode != 0 and "engine crashed on purpose" in seen["log"]
    assert not seen["left"]  # a failed job leaves no result behind
    output = seen["rerun"].stdout + seen["rerun"].stderr
    assert seen["rerun"].returncode == 0, output[-3000:]
    assert jobs_run(output) == 1 and jobs_run(output, "native_build") == 0
    assert json.loads(seen["cell"].read_text())["status"] == "ok"
