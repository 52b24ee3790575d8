"""The scale-out profiles: a dry run with each shows the jobs a cluster would get, GPU resources
included, without a cluster. The local default limits GPU jobs to one at a time."""

import functools
import re
import shutil
import subprocess
import sys

import pytest
from conftest import COPY_IGNORE, ROOT

GPU_CELL = "results/cells/latency/deberta/cuda/native/set~main60/launch~1.json"
CPU_CELL = "results/cells/latency/deberta/cpu/native/set~main60/launch~1.json"


@pytest.fixture(scope="module")
def fresh_copy(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("profiles") / "rmbench"
    shutil.copytree(ROOT, workdir, ignore=COPY_IGNORE)
    return workdir


@functools.cache  # each dry run takes seconds: tests asking for the same one share it
def dry_run_jobs(workdir, profile: str, targets=(GPU_CELL, CPU_CELL)) -> dict[str, dict]:
    """Output file -> {'rule': ..., 'input': '...', 'resources': {...}} for every job of a dry
    run of the targets (by default two cells); a job with several outputs under each."""
    cmd = [sys.executable, "-m", "snakemake", "--workflow-profile", f"workflow/profiles/{profile}"]
    cmd += ["--dry-run", "--cores", "2", *targets]
    run = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    jobs, current = {}, None
    for line in (run.stdout + run.stderr).splitlines():
        if m := re.match(r"\s*rule (\w+):", line):
            current = {"rule": m.group(1), "resources": {}}
        elif current and (m := re.match(r"\s*input: (.*)", line)):
            current["input"] = m.group(1)
        elif current and (m := re.match(r"\s*output: (.*)", line)):
            # each output path, without a storage provider's " (send to storage)"
            jobs |= {output.split(" ")[0]: current for output in m.group(1).split(", ")}
        elif current and (m := re.match(r"\s*resources: (.*)", line)):
            current["resources"] = dict(kv.split("=", 1) for kv in m.group(1).split(", "))
    return jobs


def job_for(jobs: dict, path: str) -> dict:
    """The job writing `path` (a storage provider may show it under its prefix)."""
    return next(job for output, job in jobs.items() if output.endswith(path))


@pytest.mark.parametrize("profile", ["slurm", "kubernetes", "default"])
def test_gpu_cells_carry_gpu_resources_and_cpu_cells_do_not(fresh_copy, profile):
    jobs = dry_run_jobs(fresh_copy, profile)
    gpu, cpu = job_for(jobs, GPU_CELL), job_for(jobs, CPU_CELL)
    assert gpu["rule"] == "gpu_cell" and cpu["rule"] == "cell"
    assert gpu["resources"]["gpu"] == "1" and gpu["resources"]["gpu_manufacturer"] == "nvidia"
    assert "gpu" not in cpu["resources"]
    for job in (gpu, cpu):
        assert int(job["resources"]["mem_mb"]) >= 4000 and int(job["resources"]["runtime"]) > 0
    if profile == "slurm":
        assert gpu["resources"]["slurm_partition"] == "YOUR_GPU_PARTITION"
        assert cpu["resources"]["slurm_partition"] == "YOUR_CPU_PARTITION"


def test_memory_requests_follow_each_models_size(fresh_copy):
    """The default's 4-layer DeBERTa (182M weights, 128K embeddings) asks for more than its 4-layer
    ELECTRA (82M); exporting a model asks for more than a launch on it (rmbench.plan.resources)."""
    electra_cell = CPU_CELL.replace("/deberta/", "/electra/")
    jobs = dry_run_jobs(fresh_copy, "default", (CPU_CELL, electra_cell))
    mem = {path: int(job_for(jobs, path)["resources"]["mem_mb"]) for path in (CPU_CELL, electra_cell)}
    assert mem[CPU_CELL] > mem[electra_cell] >= 2000
    export = int(job_for(jobs, "results/onnx/deberta/model.onnx")["resources"]["mem_mb"])
    assert export > mem[CPU_CELL]


def test_every_job_of_the_default_dag_declares_standard_resources(fresh_copy):
    jobs = dry_run_jobs(fresh_copy, "default")
    assert len(jobs) > 5  # the cells and everything they need: data, models, export, build, gates
    for output, job in jobs.items():
        assert {"mem_mb", "runtime"} <= set(job["resources"]), output


def test_a_relative_shift_cell_gets_its_own_export_behind_its_own_parity_gate(fresh_copy):
    cell = "results/cells/decomposition/deberta/cpu/native/set~main60+precision~fp32+optimizer~relative_shift/launch~1.json"
    jobs = dry_run_jobs(fresh_copy, "extended", (cell,))  # a study of the extended tier
    assert job_for(jobs, cell)["rule"] == "cell"
    assert job_for(jobs, "results/onnx/deberta/model.relshift.onnx")["rule"] == "export_onnx_relative_shift"
    assert job_for(jobs, "results/correctness/deberta.relshift.json")["rule"] == "parity_relative_shift"
    assert job_for(jobs, "results/correctness/deberta_native.json")["rule"] == "native_parity"


def test_a_cell_on_the_engines_operator_export_waits_for_the_operator_library_and_its_gate(fresh_copy):
    cell = "results/cells/latency/deberta/cpu/ort_python/set~main60/launch~1.json"  # config.yaml's export
    jobs = dry_run_jobs(fresh_copy, "default", (cell,))
    assert job_for(jobs, "results/onnx/deberta/model.mha.onnx")["rule"] == "export_onnx_multihead_attention"
    gate = job_for(jobs, "results/correctness/deberta.mha.json")
    assert gate["rule"] == "parity_multihead_attention"
    assert "results/native/bin/librmbench_ops.so" in gate["input"]
    assert job_for(jobs, "results/native/bin/librmbench_ops.so")["rule"] == "native_build"


def test_the_gpu_visit_target_needs_neither_onnxruntime_gpu_nor_the_native_build(fresh_copy):
    """What a GPU machine with PyTorch alone can run (envs/gpu-visit.sh): the GPU cells of the
    runtimes that score with PyTorch, and what they need, nothing native."""
    jobs = dry_run_jobs(fresh_copy, "default", ("gpu_torch",))
    cells = {output: job for output, job in jobs.items() if "results/cells/" in output}
    runtimes = {output.split("/")[5] for output in cells}
    assert runtimes == {"hf_eager", "torch_compile", "fastapi"}
    assert all(job["rule"] == "gpu_cell" for job in cells.values())
    # the default config's GPU launches of those runtimes per model: latency (eager 5, compile 3,
    # FastAPI 3) and eager's batching rows (4 variants x 3)
    assert len(cells) == 3 * (5 + 3 + 3) + 3 * 4 * 3
    assert sum("/batching/" in output for output in cells) == 3 * 4 * 3
    assert not any("native" in output for output in jobs)  # neither the engine's build nor its gate
    # nor an ONNX file: these runtimes declare they load none (Runtime.needs_onnx)
    assert not any("results/onnx/" in output or "results/correctness/" in output for output in jobs)
    assert job_for(jobs, "results/reference/deberta/main60.json")["rule"] == "reference_scores"
