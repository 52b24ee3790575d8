"""A slice of the smoke profile through a real one-node SLURM cluster (envs/slurm-cluster.sh),
submitted with the slurm profile: every job an sbatch job, tracked by sacct."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import ROOT, crashing_engine, needs, snakemake

needs(
    shutil.which("sbatch") is not None and os.geteuid() == 0,
    "needs root and SLURM: bash envs/setup.sh --slurm",
)

# The slice: the latency study on ELECTRA, on the CPU, eager against native (one sequential block
# and its looks, the replication's launches), then its tables. What it scores with (data, models,
# exports, gates, the native build) comes from the smoke run.
SLICE = {
    "studies": {
        "latency": {
            "models": ["electra"],
            "devices": ["cpu"],
            "runtimes": {
                runtime: {"models": ["deberta"]}
                for runtime in ("torch_compile", "fastapi", "openvino", "ort_python")
            }
            | {"native": {"variants": {"cpu": [{}]}}},
            "replicate": {"runtimes": ["native"]},
        }
    }
}
TARGET = "paper/tables/latency.tex"
# The site settings a user overrides on the command line (workflow/profiles/slurm): the test
# cluster's account and partition, and 2 cores.
SITE = [
    "--default-resources", "slurm_account=rmbench", "slurm_partition=rmbench", "mem_mb=2000", "runtime=30",
    "--set-threads", "cell=1", "native_build=2",
    "--slurm-init-seconds-before-status-checks", "1",
    "--jobs", "2",
]  # fmt: skip


def cluster(action: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "envs/slurm-cluster.sh", action],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def slurm(workdir, *args):
    """The slice through the slurm profile, bounded: the executor ignores SIGTERM while it waits.
    The executor checks its jobs every second (tests/slurm_snakemake.py)."""
    configs = [
        "workflow/profiles/extended/experiment.yaml",
        "workflow/profiles/smoke/experiment.yaml",
        "slice.yaml",
    ]
    entry = (str(Path(__file__).with_name("slurm_snakemake.py")),)
    return snakemake(
        workdir, "--configfile", *configs, *SITE, *args, cores=None, profile="slurm", timeout=900, entry=entry
    )


def submitted(output: str) -> list[str]:
    """The SLURM job ids the executor reported, in order."""
    return re.findall(r"has been submitted with SLURM jobid (\d+)", output)


def states(job_ids) -> dict[str, str]:
    """sacct's final state of each job (its allocation, not its steps)."""
    out = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-o", "JobID,State", "-j", ",".join(job_ids)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split("|", 1) for line in out.split())


# What the slice reuses from the smoke run, made first (conftest): the gates, exports and data of
# its cells, both sets. Its own copy of the repository then reuses them.
SMOKE_NEEDS = [
    "results/cells/latency/electra/cpu/hf_eager/set~main60/launch~1.json",
    "results/cells/latency/electra/cpu/native/set~main60/launch~1.json",
    "results/cells/latency/electra/cpu/native/set~rep60a/launch~1.json",
]
SMOKE_COPIES = ("slice",)
FAILING_CELL = SMOKE_NEEDS[1]  # the native engine's: crashed on the node, then rerun by name


def fail_and_rerun(workdir: Path) -> dict:
    """A cell whose engine crashes on the node, then the same cell named again once fixed."""
    with crashing_engine(workdir):
        failed = slurm(workdir, FAILING_CELL, "--forcerun", FAILING_CELL)
    return {"failed": failed, "rerun": slurm(workdir, FAILING_CELL)}


def start_after_smoke(copies: dict[str, Path]):
    """conftest starts this in a thread once the smoke run has made SMOKE_NEEDS, so that the
    cluster's waits overlap the rest of it: the cluster, the slice on its copy, then a failing
    cell of the slice and its rerun. The cluster stops when the module's tests are done."""
    started = cluster("start")
    if started.returncode != 0:
        raise RuntimeError(f"envs/slurm-cluster.sh start failed:\n{started.stderr}")
    workdir = copies["slice"]
    (workdir / "slice.yaml").write_text(yaml.safe_dump(SLICE))
    run = slurm(workdir, TARGET)
    return workdir, run, fail_and_rerun(workdir) if run.returncode == 0 else None


@pytest.fixture(scope="module")
def slurm_run(followed):
    try:
        workdir, run, failure = followed
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
        yield workdir, run.stdout + run.stderr, failure
    finally:
        cluster("stop")
        # else every later Snakemake start waits 9 s on scontrol for the controller that is gone
        assert not Path("/etc/slurm/slurm.conf").exists(), "the cluster's stop left its config behind"


def test_every_job_of_the_slice_ran_through_sbatch_and_completed(slurm_run):
    _, output, _ = slurm_run
    jobs = submitted(output)
    rules = set(re.findall(r"^(?:rule|checkpoint) (\w+):", output, flags=re.MULTILINE))
    assert {"cell", "sequential_look", "study_table"} <= rules
    assert "native_build" not in rules  # the smoke run's build, reused
    assert len(jobs) >= 8, output[-3000:]
    assert set(states(jobs).values()) == {"COMPLETED"}


def test_the_tables_have_the_local_runs_structure_and_verdicts(slurm_run, smoke_run):
    workdir, _, _ = slurm_run
    remote = pd.read_csv(workdir / "paper/tables/latency.csv")
    local = pd.read_csv(smoke_run / "paper/tables/latency.csv")
    assert list(remote.columns) == list(local.columns)
    keys = ["model", "device", "set", "runtime"]
    shared = local.merge(remote[keys], on=keys)
    assert set(remote["runtime"]) == {"hf_eager", "native"}
    assert len(shared) == len(remote)  # every remote row is one the local run has
    for column in ("verdict", "paper_verdict", "verdict_look"):
        assert remote[column].notna().any() or local[column].isna().all(), column
    allowed = set(local["verdict"].dropna()) | {
        "faster",
        "slower",
        "tied",
        "undecided at the cap",
        "baseline",
    }
    assert set(remote["verdict"].dropna()) <= allowed
    assert (workdir / "results/tables/latency/sequential.csv").exists()


def test_a_job_that_fails_on_the_node_is_reported_with_its_log_and_reruns_by_name(slurm_run):
    workdir, _, seen = slurm_run
    failed, rerun = seen["failed"], seen["rerun"]
    output = failed.stdout + failed.stderr
    assert failed.returncode != 0
    assert "engine crashed on purpose" in output  # the job's log, shown by the executor
    assert re.search(r"SLURM-job '\d+' failed, SLURM status is: 'FAILED'", output), output[-3000:]
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    jobs = submitted(rerun.stdout + rerun.stderr)
    assert len(jobs) == 1 and states(jobs) == {jobs[0]: "COMPLETED"}
    assert (workdir / FAILING_CELL).exists()


def test_the_cluster_script_refuses_without_its_tools(tmp_path):
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    (tmp_path / "id").symlink_to(shutil.which("id"))
    run = subprocess.run(
        [shutil.which("bash"), "envs/slurm-cluster.sh", "start"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode != 0 and "bash envs/setup.sh --slurm" in run.stderr
