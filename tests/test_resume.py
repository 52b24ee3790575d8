"""What a user does when a run breaks: resume a killed run, rerun a failed cell by naming its file.
Both on a slice of the pipeline that reuses the smoke run's data, models, exports, gates and build."""

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from conftest import crashing_engine, pipeline_copy, snakemake, user_env

EAGER = "results/cells/latency/electra/cpu/hf_eager/set~main60"
NATIVE_CELL = "results/cells/latency/electra/cpu/native/set~main60/launch~1.json"


@pytest.fixture
def workdir(smoke_run, tmp_path):
    return pipeline_copy(tmp_path / "rmbench", smoke_run)


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


def test_a_run_killed_mid_launch_resumes_keeping_the_finished_launches(workdir):
    """kill -9 of Snakemake and its job while the second of two launches runs. After --unlock, the
    same command reruns that launch alone and leaves the finished one untouched."""
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

    locked = snakemake(workdir, *targets, cores=1)  # the killed run's lock stays (README)
    assert locked.returncode != 0 and "--unlock" in locked.stdout + locked.stderr
    assert snakemake(workdir, "--unlock", cores=None).returncode == 0
    resumed = snakemake(workdir, *targets, cores=1)
    output = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, output[-3000:]
    assert jobs_run(output) == 1  # the killed launch, nothing else
    assert (finished.stat().st_mtime_ns, digest(finished)) == before
    assert json.loads((workdir / killed).read_text())["status"] == "ok"


def test_a_failed_cell_reruns_alone_by_naming_its_file(workdir):
    """README, "Rerun one cell": a launch that failed (its engine crashed) reruns by name, as the
    only job, once the cause is gone."""
    with crashing_engine(workdir):
        failed = snakemake(workdir, NATIVE_CELL, cores=1)
    log = (workdir / "results/logs/cells/latency/electra/cpu/native/set~main60/launch~1.log").read_text()
    assert failed.returncode != 0 and "engine crashed on purpose" in log
    assert not (workdir / NATIVE_CELL).exists()  # a failed job leaves no result behind

    rerun = snakemake(workdir, NATIVE_CELL, cores=1)
    output = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0, output[-3000:]
    assert jobs_run(output) == 1 and jobs_run(output, "native_build") == 0
    assert json.loads((workdir / NATIVE_CELL).read_text())["status"] == "ok"
