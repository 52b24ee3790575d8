"""The smoke profile end to end on a fresh copy of the repository."""

import itertools
import re
import shutil
import subprocess
import sys
import time

import pandas as pd
import pytest
from conftest import ROOT

COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", ".snakemake", "results", "__pycache__", ".pytest_cache", "tables", "figures", "build"
)


def snakemake(workdir, *args):
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--workflow-profile",
        "workflow/profiles/smoke",
        "--cores",
        "2",
        *args,
    ]
    return subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, check=False, timeout=3600)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("smoke") / "rmbench"
    shutil.copytree(ROOT, workdir, ignore=COPY_IGNORE)
    run = snakemake(workdir, "all")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return workdir


def test_latency_table_has_real_numbers(smoke_run):
    table = pd.read_csv(smoke_run / "paper/tables/latency.csv")
    cpu = table[table.device == "cpu"]
    headline = cpu[cpu.set == "main60"]
    assert set(headline.runtime) == {"hf_eager", "torch_compile", "fastapi", "ort_python", "native"}
    assert set(cpu.model) == {"deberta", "electra"}
    assert set(cpu[cpu.set == "rep60a"].runtime) == {"hf_eager", "native"}  # the replication
    assert (cpu.launches_ok == 2).all()
    assert (cpu.p50_ms > 0).all() and (cpu.p95_ms >= cpu.p50_ms).all()
    assert (cpu.p50_ms_lo <= cpu.p50_ms).all() and (cpu.p50_ms <= cpu.p50_ms_hi).all()
    tex = (smoke_run / "paper/tables/latency.tex").read_text()
    assert "\\toprule" in tex and "ort\\_python" in tex
    assert (smoke_run / "paper/figures/latency.pdf").stat().st_size > 1000


def test_parity_reports_and_launch_records(smoke_run):
    import json

    for model in ("deberta", "electra"):
        report = json.loads((smoke_run / f"results/correctness/{model}.json").read_text())
        assert report["passed"] and report["max_abs_err_single"] <= 1e-4
    launches = pd.read_csv(smoke_run / "results/tables/latency/launches.csv")
    assert set(launches.status) <= {"ok", "skipped"}
    record = json.loads(
        next((smoke_run / "results/cells/latency/electra/cpu/ort_python").rglob("launch~1.json")).read_text()
    )
    assert record["provenance"]["packages"]["onnxruntime"] and record["settings"]["threads"] >= 1


def test_gpu_cells_are_recorded_as_skipped_without_a_gpu(smoke_run):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    table = pd.read_csv(smoke_run / "paper/tables/latency.csv")
    gpu = table[table.device == "cuda"]
    assert len(gpu) == 10 and (gpu.launches_ok == 0).all()
    assert gpu.note.str.contains("GPU").all()


def test_every_study_has_its_table(smoke_run):
    tokenizer = pd.read_csv(smoke_run / "paper/tables/tokenizer.csv")
    assert set(tokenizer.runtime) == {"native", "hf_fast", "hf_slow"} and (tokenizer.mean_us > 0).all()
    zerocopy = pd.read_csv(smoke_run / "paper/tables/zerocopy.csv")
    assert set(zerocopy.variant) == {"zero_copy~on+prealloc~on", "zero_copy~off+prealloc~off"}
    language = pd.read_csv(smoke_run / "paper/tables/language.csv")
    assert set(language.model) == {"deberta", "electra"} and (language.native > 0).all()
    compile_ = pd.read_csv(smoke_run / "paper/tables/compile.csv")
    assert len(compile_) == 2 and (compile_.first_call_s > 0).all() and (compile_.recompiles >= 0).all()
    gemm = pd.read_csv(smoke_run / "paper/tables/gemm.csv")
    assert set(gemm.runtime) == {"torch", "onnxruntime", "numpy"} and (gemm.gflops > 0).all()
    roofline = pd.read_csv(smoke_run / "paper/tables/roofline.csv")
    assert len(roofline) == 10 and (roofline.fraction_of_ceiling > 0).all()
    batching = pd.read_csv(smoke_run / "paper/tables/batching.csv")
    main = batching[batching.set == "main60"]
    # 4 smoke variants for native and eager; ORT-Python keeps the default's own 8 (with repeat)
    assert len(main) == 4 + 8 + 4 and (main.launches_ok == 2).all() and (main.throughput_rps > 0).all()
    assert set(batching[batching.set == "rep60a"].runtime) == {"native"}
    verdicts = pd.read_csv(smoke_run / "paper/tables/batching_verdicts.csv")
    assert verdicts.statement.str.match(
        r"^(naive|length_aware|token_budget|repeat) b=\d .*vs none b=1: \d+\.\d\dx, CIs"
    ).all()
    assert (smoke_run / "paper/figures/batching.pdf").stat().st_size > 1000
    concurrency = pd.read_csv(smoke_run / "paper/tables/concurrency.csv")
    # ORT-Python x 4 smoke variants, native its default's own 6, eager 2, fastapi and batching server 2
    assert len(concurrency) == 4 + 6 + 2 + 2 * 2 and (concurrency.launches_ok == 2).all()
    assert (concurrency.throughput_rps > 0).all() and (concurrency.p95_ms >= concurrency.p50_ms).all()
    verdicts = pd.read_csv(smoke_run / "paper/tables/concurrency_verdicts.csv")
    assert set(verdicts.kind) == {"vs one client", "service vs engine"}
    assert verdicts.statement.str.contains(r": \d+\.\d\dx, CIs (?:apart|overlap)$").all()
    assert (smoke_run / "paper/figures/concurrency.pdf").stat().st_size > 1000
    replication = pd.read_csv(smoke_run / "paper/tables/replication.csv")
    native = replication[(replication.candidate == "native") & (replication.baseline == "hf_eager")]
    assert len(native) == 4 and set(native.reproduced) <= {"yes", "no"}  # 2 models x 2 metrics


def test_launches_ran_interleaved_and_their_order_is_recorded(smoke_run):
    launches = pd.read_csv(smoke_run / "results/tables/latency/launches.csv")
    ran = launches[launches.status == "ok"].sort_values("order")
    assert ran.order.is_unique
    # round-robin: no cell starts its second launch before every cell has started its first
    assert ran[ran.launch == 1].order.max() < ran[ran.launch == 2].order.min()
    # seeded shuffle within a round: runtimes alternate instead of running in blocks
    first = ran[ran.launch == 1].runtime.tolist()
    assert sum(a != b for a, b in itertools.pairwise(first)) > len(set(first))


def test_noop_rerun_is_quick_and_one_cell_reruns_by_name(smoke_run):
    start = time.monotonic()
    run = snakemake(smoke_run, "all")
    assert run.returncode == 0 and "Nothing to be done" in run.stdout + run.stderr
    assert time.monotonic() - start < 30
    cell = "results/cells/latency/electra/cpu/ort_python/set~main60/launch~2.json"
    before = (smoke_run / cell).stat().st_mtime
    run = snakemake(smoke_run, cell, "--forcerun", cell)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (smoke_run / cell).stat().st_mtime > before


def test_report_captions_every_figure_and_table(smoke_run):
    run = snakemake(smoke_run, "--report", "report.html")
    assert run.returncode == 0, run.stderr[-3000:]
    html = (smoke_run / "report.html").read_text()
    for name in (
        "latency.png",
        "batching.png",
        "concurrency.png",
        "latency.csv",
        "replication.csv",
        "roofline.csv",
    ):
        assert name in html, name
    assert "Per-row latency on the headline set" in html and "one row per cell" in html


def test_paper_target_quotes_only_numbers_the_run_measured(smoke_run):
    run = snakemake(smoke_run, "paper")
    assert run.returncode == 0, run.stderr[-2000:]
    if shutil.which("latexmk") is None:
        assert "latexmk not found" in run.stderr
    numbers = (smoke_run / "paper/tables/numbers.tex").read_text()
    defined = set(re.findall(r"\\rmset\{([^}]*)\}", numbers))
    text = "".join(p.read_text() for p in sorted((smoke_run / "paper/sections").glob("*.tex")))
    quoted = set(re.findall(r"\\rmnum\{([^}]*)\}", text))
    # The smoke profile runs every latency runtime on both models: each key the text quotes resolves.
    latency = {key for key in quoted if key.startswith("latency/")}
    assert latency and latency <= defined
