"""The smoke profile end to end on a fresh copy of the repository."""

import itertools
import json
import re
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import LAST_STEP, needs, outcome, profile_cells, profile_config, scenario_outcomes, snakemake
from rmbench.plan.cells import parse_params
from rmbench.probes.operators import MATRIX_OPS, SESSION_RUN, SUMMARY_ROWS, WHOLE_CALL
from rmbench.report.paper import quoted_keys, text_files
from rmbench.report.tables import cell_columns


def planned(study: str, **where) -> pd.DataFrame:
    """The rows a study's table has for the smoke profile's cells: model, device, the table's
    names for the cell (runtime, variant, set) and its launches' minimum and cap."""
    rows = [
        {"model": c["model"], "device": c["device"], "minimum": c["minimum"], "cap": c["cap"]}
        | cell_columns(study, c["runtime"], parse_params(c["params"]))
        for c in profile_cells(study, **where)
    ]
    return pd.DataFrame(rows).drop_duplicates(ignore_index=True)


def test_latency_table_has_real_numbers(smoke_run):
    table = pd.read_csv(smoke_run / "paper/tables/latency.csv")
    cpu = table[table.device == "cpu"]
    headline = cpu[cpu.set == "main60"]
    cells = planned("latency", device="cpu")
    # ONNX Runtime's fused graph is a runtime of its own ('ort_python optimizer=transformers')
    assert set(headline.runtime) == set(cells[cells.set == "main60"].runtime)
    assert {"ort_python optimizer=transformers", "native optimizer=transformers"} <= set(headline.runtime)
    assert set(cpu.model) == {"deberta", "electra", "qwen3"}
    # the fused graph has no qwen3 form (rmbench.models.families): its cells say so, untimed
    unsupported = cpu.launches_ok == 0
    assert (
        set(cpu[unsupported].model) == {"qwen3"}
        and cpu[unsupported].runtime.str.endswith("=transformers").all()
    )
    assert cpu[unsupported].note.str.contains("declares no optimizer model type").all()
    cpu = cpu[~unsupported]
    # rows that lost tokens to the limit: a pair's 512; a chat row keeps its model's context
    assert cpu.rows_cut.notna().all() and (cpu[cpu.model == "qwen3"].rows_cut == 0).all()
    assert set(cpu[cpu.set == "rep60a"].runtime) == set(
        cells[cells.set == "rep60a"].runtime
    )  # the replication
    # the cells with a cap run in looks (smoke: 2 launches, then 1 more while undecided, up to 3)
    limits = cpu.merge(cells, on=["model", "set", "runtime"])
    assert len(limits) == len(cpu)
    looked = limits.cap > limits.minimum
    assert looked.any() and (limits[~looked].launches_ok == limits[~looked].minimum).all()
    assert limits[looked].launches_ok.between(limits[looked].minimum, limits[looked].cap).all()
    looked = cpu.runtime.isin(limits[looked].runtime) & (cpu.set == "main60")
    looks = pd.read_csv(smoke_run / "results/tables/latency/sequential.csv")
    for _, row in cpu[looked].iterrows():  # each cell ran what its block's last look counted
        mine = looks[looks.model == row.model]
        name, _, export = row.runtime.partition(" optimizer=")
        cell = f"{name}/set~main60" + (f"+optimizer~{export}" if export else "")
        as_candidate, as_baseline = mine[mine.candidate == cell], mine[mine.baseline == cell]
        assert len(as_candidate) + len(as_baseline) > 0
        assert (as_candidate.n_candidate == row.launches_ok).all()
        assert (as_baseline.n_baseline == row.launches_ok).all()
    assert (cpu.p50_ms > 0).all() and (cpu.p95_ms >= cpu.p50_ms).all()
    assert (cpu.p50_ms_lo <= cpu.p50_ms).all() and (cpu.p50_ms <= cpu.p50_ms_hi).all()
    # every launch on this machine: one host per cell, named, and no cross-host warning
    assert cpu.host.nunique() == 1 and cpu.host.iloc[0].endswith(" CPUs")
    assert not cpu.warning.fillna("").str.contains("host").any()
    tex = (smoke_run / "paper/tables/latency.tex").read_text()
    assert f"Launches ran on {cpu.host.iloc[0]}." in tex.replace("\\_", "_")
    assert "\\toprule" in tex and "ort\\_python" in tex
    assert (smoke_run / "paper/figures/latency.pdf").stat().st_size > 1000


def test_every_table_names_the_machine_it_was_measured_on(smoke_run):
    host = pd.read_csv(smoke_run / "paper/tables/latency.csv").host.iloc[0]
    tables = [t for t in sorted((smoke_run / "paper/tables").glob("*.tex")) if t.name != "numbers.tex"]
    unnamed = [t.name for t in tables if f" on {host}." not in t.read_text().replace("\\_", "_")]
    assert len(tables) >= 17 and not unnamed, unnamed
    # and that their numbers come from tiny models (the smoke profile's caveat)
    caveat = "Smoke profile: tiny models; the numbers test the pipeline, not the runtimes."
    uncaveated = [t.name for t in tables if f"\\caption{{{caveat} " not in t.read_text()]
    assert not uncaveated, uncaveated
    assert f"**{caveat}**" in (smoke_run / "paper/tables/findings.md").read_text()


def test_parity_reports_and_launch_records(smoke_run):
    for model in ("deberta", "electra", "qwen3"):
        report = json.loads((smoke_run / f"results/correctness/{model}.json").read_text())
        assert report["passed"] and report["max_abs_err_single"] <= 1e-4
        native = json.loads((smoke_run / f"results/correctness/{model}_native.json").read_text())
        # every row of every set: smoke's main60 (12) and rep60a (8), the default's rep60b and set150
        assert (
            native["passed"]
            and not native["token_mismatches"]
            and native["rows_tokenized"] == 12 + 8 + 60 + 150
        )
        if model == "qwen3":  # no fused graph (rmbench.models.families)
            continue
        # the fused graph's gate, and what fused: all of ELECTRA's 2 layers; DeBERTa's layer norms
        # and GELUs but not its disentangled attention
        fused_gate = json.loads((smoke_run / f"results/correctness/{model}.opt.json").read_text())
        assert fused_gate["passed"] and fused_gate["onnx"].endswith("model.opt.onnx")
        fused = json.loads((smoke_run / f"results/onnx/{model}/model.opt.json").read_text())
        assert fused["Attention"] == (2 if model == "electra" else 0)
        assert fused["SkipLayerNormalization"] == 4 and fused["BiasGelu"] == 2, fused
    launches = pd.read_csv(smoke_run / "results/tables/latency/launches.csv")
    assert set(launches.status) <= {"ok", "skipped", "unsupported"}
    assert set(launches[launches.status == "unsupported"].model) == {"qwen3"}
    record = json.loads(
        next((smoke_run / "results/cells/latency/electra/cpu/ort_python").rglob("launch~1.json")).read_text()
    )
    assert record["provenance"]["packages"]["onnxruntime"] and record["settings"]["threads"] >= 1
    # the instruction sets the kernels depend on, as /proc/cpuinfo reports them
    from rmbench.probes.provenance import ISA_FLAGS

    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    line = next(line for line in cpuinfo if line.startswith("flags"))
    assert record["provenance"]["cpu_flags"] == [f for f in ISA_FLAGS if f in line.split(":", 1)[1].split()]
    # ORT launches on the CPU run without PyTorch in the process; PyTorch launches with it
    assert not record["provenance"]["torch_loaded"]
    assert record["provenance"]["environment"]["USE_TORCH"] == "0"
    # and without ONNX Runtime's telemetry thread (config: onnxruntime_telemetry)
    assert record["provenance"]["environment"]["ORT_DISABLE_TELEMETRY"] == "1"
    eager = json.loads(
        next((smoke_run / "results/cells/latency/electra/cpu/hf_eager").rglob("launch~1.json")).read_text()
    )
    assert eager["provenance"]["torch_loaded"] and "USE_TORCH" not in eager["provenance"]["environment"]


def test_gpu_cells_are_recorded_as_skipped_without_a_gpu(smoke_run):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    table = pd.read_csv(smoke_run / "paper/tables/latency.csv")
    gpu = table[table.device == "cuda"]
    cells = planned("latency", device="cuda")
    # every runtime has a GPU cell
    assert (
        set(gpu.runtime)
        == set(cells.runtime)
        == {"hf_eager", "torch_compile", "fastapi", "ort_python", "native"}
    )
    assert len(gpu) == len(cells) and (gpu.launches_ok == 0).all()
    assert gpu.note.str.contains("GPU").all()
    # a skipped GPU cell is told apart without importing torch (it costs a second, not five)
    records = sorted((smoke_run / "results/cells/latency").glob("*/cuda/*/*/launch~*.json"))
    assert len(records) == cells.minimum.sum()
    for path in records:
        record = json.loads(path.read_text())
        assert record["status"] == "skipped" and not record["provenance"]["torch_loaded"], path
        assert record["provenance"]["device_name"] == "no CUDA device"


def test_a_users_own_folder_goes_through_source_local(smoke_run):
    """The smoke profile's stand-in Llama-3.1 folder, saved as a trainer saves one, is read back
    as `source: local` reads any folder: its own tokenizer and chat template, scored natively."""
    from rmbench.models.build import load_tokenizer
    from rmbench.models.families import FAMILY_FILE, family_of_folder

    folder, model = smoke_run / "results/stand-in/llama3", smoke_run / "results/models/llama3"
    assert not (folder / FAMILY_FILE).exists()  # a user's folder names no rmbench family
    assert family_of_folder(model)["name"] == "llama-3.1-8b"
    template = load_tokenizer(model).chat_template
    assert template == load_tokenizer(folder).chat_template and "Cutting Knowledge Date" in template
    launches = pd.read_csv(smoke_run / "results/tables/zerocopy/launches.csv")
    llama = launches[launches.model == "llama3"]
    assert len(llama) == len(profile_cells("zerocopy", model="llama3")) > 0
    assert (llama.status == "ok").all() and (llama.runtime == "native").all()


def test_every_study_has_its_table(smoke_run):
    tokenizer = pd.read_csv(smoke_run / "paper/tables/tokenizer.csv")
    assert (
        set(tokenizer.runtime) == {"native", "hf_fast", "hf_backend", "hf_slow", "tiktoken"}
        and (tokenizer.mean_us > 0).all()
    )
    assert set(tokenizer[tokenizer.runtime == "tiktoken"].model) == {"qwen3"}  # a byte-level BPE only
    assert set(tokenizer[tokenizer.model == "qwen3"].runtime) == set(tokenizer.runtime)
    assert (tokenizer.first_pass_us > 0).all()  # the first pass, word caches cold
    zerocopy = pd.read_csv(smoke_run / "paper/tables/zerocopy.csv")
    assert set(zerocopy.variant) == {"zero_copy~on+prealloc~on", "zero_copy~off+prealloc~off"}
    assert set(zerocopy.model) == set(profile_config()["studies"]["zerocopy"]["models"])
    language = pd.read_csv(smoke_run / "paper/tables/language.csv")
    assert set(language.model) == {"deberta", "electra", "qwen3"} and (language.native > 0).all()
    # the equivalence test's 90% interval holds the point difference
    assert set(language.equivalence) <= {"equivalent", "not shown"}
    assert (language.difference_lo_pct <= language.difference_pct).all()
    assert (language.difference_pct <= language.difference_hi_pct).all()
    # and paired by round: every launch number both runtimes ran (2, or 3 after a second look)
    latency = pd.read_csv(smoke_run / "paper/tables/latency.csv").query("set == 'main60' and device == 'cpu'")
    ran = latency[latency.runtime.isin(["native", "ort_python"])].groupby("model").launches_ok.min()
    assert (language.n_pairs == language.model.map(ran)).all()
    assert (language.paired_lo_pct <= language.paired_hi_pct).all()
    assert (language.pairs_for_equivalence >= 2).all()  # a count, or 1001 beyond the margin
    # the per-row difference from the launches' own per-row latencies, inside its interval
    assert (language.row_difference_ms_lo <= language.row_difference_ms).all()
    assert (language.row_difference_ms <= language.row_difference_ms_hi).all()
    compile_ = pd.read_csv(smoke_run / "paper/tables/compile.csv")
    assert len(compile_) == 2 and (compile_.first_call_s > 0).all() and (compile_.recompiles >= 0).all()
    # a warm-cache cell's launches found the cache that its untimed launch filled
    launches = pd.read_csv(smoke_run / "results/tables/compile/launches.csv")
    warm = launches[launches.variant.str.contains("cache~warm")]
    assert len(warm) == 2 and (warm.cache_warm == 1).all()
    assert (launches[launches.variant.str.contains("cache~cold")].cache_warm == 0).all()
    assert (
        len(list((smoke_run / "results/inductor-cache/warmed/compile").glob("*/cpu/*/*/launch~0.json"))) == 1
    )
    gemm = pd.read_csv(smoke_run / "paper/tables/gemm.csv")
    assert set(gemm.runtime) == {"torch", "onnxruntime", "numpy"} and (gemm.gflops > 0).all()
    assert set(gemm.variant) == {"-", "batch~8"}  # a row's GEMMs and a batch's
    gemm_tex = (smoke_run / "paper/tables/gemm.tex").read_text()
    assert "& batch=8 &" in gemm_tex and "textasciitilde" not in gemm_tex  # labelled as it reads
    roofline = pd.read_csv(smoke_run / "paper/tables/roofline.csv")
    rows = gemm[gemm.variant == "-"].groupby("model").gflops.max()  # the ceiling: a row's shapes only
    assert (roofline.ceiling_gflops == roofline.model.map(rows)).all()
    # every runtime that scored on the CPU (qwen3 has no fused graph: rmbench.models.families)
    latency = pd.read_csv(smoke_run / "paper/tables/latency.csv")
    scored = latency.query("device == 'cpu' and set == 'main60' and launches_ok > 0")
    assert len(roofline) == len(scored) and (roofline.fraction_of_ceiling > 0).all()
    # every latency launch probed the ceiling in its own process (config: ceiling_probe)
    assert (roofline.probe_launches == roofline.launches).all() and (roofline.fraction_in_launch > 0).all()
    # where each model's time goes against the ceiling, profiled on the engines' export
    gap = pd.read_csv(smoke_run / "paper/tables/ceiling_gap.csv")
    assert set(gap.model) == {"deberta", "electra", "qwen3"}
    exports = gap.drop_duplicates("model").set_index("model").export  # each family's own (config.yaml)
    assert exports.to_dict() == {"deberta": "multihead_attention", "electra": "transformers", "qwen3": "none"}
    for _, parts in gap.groupby("model"):
        assert (
            abs(parts.share.sum() - 1) < 1e-9 and parts.share.iloc[0] > 0 and parts.best_runtime.notna().all()
        )
    batching = pd.read_csv(smoke_run / "paper/tables/batching.csv")
    main = batching[(batching.set == "main60") & (batching.device == "cpu")]
    # each runtime's own variants (native: length-aware b=4 on the fused graph too; ORT-Python:
    # repeat, padding to the max length, the relative-shift export, both padding sides)
    assert len(main) == len(planned("batching", device="cpu", set="main60"))
    # three cells say why they ran nothing: an encoder padded on the left, qwen3's fused graph,
    # and qwen3 padded to max_length (a chat row keeps its model's context: rmbench.models.build.row_limit)
    refused = main[main.launches_ok == 0]
    done = main.drop(refused.index)
    assert (done.launches_ok == 2).all() and (done.throughput_rps > 0).all()
    assert sorted(refused.note.str.split(":").str[0]) == [
        "ONNX Runtime's fused graph is not built for qwen3-0.6b",
        "electra-large pads on the right only",
        "qwen3-0.6b keeps a chat row whole up to its context",
    ]
    assert main.variant.str.contains("optimizer~transformers").sum() == 2
    # eager's GPU rows: skipped here, and the table says so
    gpu = batching[batching.device == "cuda"]
    assert set(gpu.runtime) == {"hf_eager"} and len(gpu) == len(planned("batching", device="cuda"))
    assert (gpu.launches_ok == 0).all()
    assert set(batching[batching.set == "rep60a"].runtime) == {"native"}
    verdicts = pd.read_csv(smoke_run / "paper/tables/batching_verdicts.csv")
    assert verdicts.statement.str.match(
        r"^(naive|length_aware|token_budget|repeat) b=\d .*vs none b=1: \d+\.\d\dx( \[\d+\.\d\d, \d+\.\d\d\])?"
        r", paired by round \d+\.\d\dx \[\d+\.\d\d, \d+\.\d\d\], CIs"  # launch k of each cell ran in round k
    ).all()
    assert verdicts.statement.str.contains(r"\(padding alone: \d+\.\d\dx\)$").all()
    to_max = verdicts[verdicts.candidate.str.contains("padding~max_length")]
    assert len(to_max) == 1 and (to_max.padding_only < 0.5).all()  # electra's rows padded to 512
    shifted = verdicts[verdicts.candidate.str.contains("optimizer~relative_shift")]
    assert len(shifted) == 2 and (shifted.padding_only == 1).all()  # repeat: no padding
    assert (smoke_run / "paper/figures/batching.pdf").stat().st_size > 1000
    # ORT's profile of the first rows alone and as batches of 4 copies (operator_profile), in the
    # stock export and the relative-shift one (the default's optimizers)
    operators = pd.read_csv(smoke_run / "paper/tables/batch_operators.csv")
    assert set(operators.model) == {"electra", "qwen3"}  # the study's models
    operators = operators[operators.model == "electra"]
    total = operators[operators.op_type == "total"].set_index("optimizer")
    assert set(total.index) == {"none", "relative_shift"}
    assert (operators.batch == 4).all()
    assert (total.ms_per_row_alone > 0).all() and (total.ms_per_row_batched > 0).all()
    ops = operators[~operators.op_type.isin(SUMMARY_ROWS) & (operators.optimizer == "none")]
    assert ops.extra_ms_per_row.sum() == pytest.approx(total.extra_ms_per_row["none"])
    # the whole session.run per row: at least its kernels' time
    run = operators[operators.op_type == SESSION_RUN].set_index("optimizer")
    assert (run.ms_per_row_alone >= total.ms_per_row_alone).all() and (run.ratio > 0).all()
    # ... and the whole call (tokenizing and feeding too): at least the session.run
    call = operators[operators.op_type == WHOLE_CALL].set_index("optimizer")
    assert (call.ms_per_row_alone >= run.ms_per_row_alone).all()
    assert ops[ops.matrix_product].op_type.isin(MATRIX_OPS).all() and ops.matrix_product.any()
    assert r"\label{tab:batch-operators}" in (smoke_run / "paper/tables/batch_operators.tex").read_text()
    # torch.profiler on the same rows in the PyTorch runtimes (torch_runtimes): the weight products'
    # work is known (ELECTRA shares none in a batch) and so is their rate
    torch_ops = pd.read_csv(smoke_run / "paper/tables/torch_batch_operators.csv")
    assert set(torch_ops.model) == {"electra", "qwen3"}
    torch_ops = torch_ops[torch_ops.model == "electra"]  # linear layers with a bias: aten::addmm
    addmm = torch_ops[torch_ops.op_type == "aten::addmm"].set_index("runtime")
    assert set(addmm.index) == {"hf_eager"} and (torch_ops.batch == 4).all()  # the unit tests: compiled
    assert (addmm.gflop_per_row_alone == addmm.gflop_per_row_batched).all() and (addmm.gflops_alone > 1).all()
    assert addmm.matrix_product.all()
    calls = torch_ops[torch_ops.op_type == WHOLE_CALL].set_index("runtime")
    totals = torch_ops[torch_ops.op_type == "total"].set_index("runtime")
    assert (calls.ms_per_row_alone >= totals.ms_per_row_alone).all()  # the call holds its operators
    # ORT's thread settings on the same rows alone and as batches of 4 copies (thread_probe)
    threads = pd.read_csv(smoke_run / "paper/tables/batch_threads.csv").set_index("setting")
    assert set(threads.model) == {"electra", "qwen3"}
    threads = threads[threads.model == "electra"]
    assert list(threads.index) == ["intra_all-sequential-inter_1", "intra_all-parallel-inter_2"]
    assert (threads.batch == 4).all()
    assert (threads.alone_ms_per_row > 0).all() and (threads.batched_ms_per_row > 0).all()
    assert threads.alone_vs_reference.iloc[0] == 1.0 and threads.batched_vs_reference.iloc[0] == 1.0
    assert r"\label{tab:batch-threads}" in (smoke_run / "paper/tables/batch_threads.tex").read_text()
    concurrency = pd.read_csv(smoke_run / "paper/tables/concurrency.csv")
    # each runtime's variants (fastapi: one of them OpenRLHF's /get_reward)
    assert len(concurrency) == len(planned("concurrency")) and (concurrency.launches_ok == 2).all()
    reward = concurrency[concurrency.variant.str.contains("endpoint~get_reward")]
    assert list(reward.runtime) == ["fastapi"] and (reward.throughput_rps > 0).all()
    adaptive = concurrency[concurrency.variant.str.contains("adaptive~on")]
    assert len(adaptive) == 1 and adaptive.runtime.item() == "batching_server"
    assert (concurrency.throughput_rps > 0).all() and (concurrency.p95_ms >= concurrency.p50_ms).all()
    verdicts = pd.read_csv(smoke_run / "paper/tables/concurrency_verdicts.csv")
    assert set(verdicts.kind) == {"vs one client", "service vs engine"}
    assert verdicts.statement.str.contains(
        r": \d+\.\d\dx(?: \[\d+\.\d\d, \d+\.\d\d\])?(?:, paired by round \d+\.\d\dx \[\d+\.\d\d, \d+\.\d\d\])?"
        r", CIs (?:apart|overlap)$"
    ).all()
    assert (smoke_run / "paper/figures/concurrency.pdf").stat().st_size > 1000
    replication = pd.read_csv(smoke_run / "paper/tables/replication.csv")
    native = replication[(replication.candidate == "native") & (replication.baseline == "hf_eager")]
    models = profile_config()["studies"]["latency"]["models"]
    assert len(native) == 2 * len(models)  # each model's p50 and p95 on the headline set
    assert set(native.reproduced) <= {"yes", "not confirmed", "no"}


def test_decomposition_steps_and_the_fidelity_gate(smoke_run):
    table = pd.read_csv(smoke_run / "paper/tables/decomposition.csv")
    steps = set(planned("decomposition").step)
    assert set(table.step) == steps
    assert {  # eager's kernels and precision, ORT's graph levels and exports, the engine's int8
        "hf_eager precision=bf16",
        "ort_python graph=disabled",
        "ort_python graph=all optimizer=disentangled_bias",
        "ort_python graph=all optimizer=multihead_attention",
        "native precision=int8 matmuls=attention",
        "native precision=fp32 optimizer=relative_shift",
    } <= steps
    # every launch ok: reduced precision reproduced its own gated scores, fp32 the reference
    assert (table.launches_ok == 2).all() and (table.gflops > 0).all()
    assert table[table.step != "hf_eager precision=fp32"].speedup.notna().all()
    fidelity = pd.read_csv(smoke_run / "paper/tables/fidelity.csv")
    assert set(fidelity.step) == {step for step in steps if re.search("precision=(bf16|int8)", step)}
    assert (
        fidelity.gate.isin(["passed", "failed"]).all() and fidelity.preference_agreement.between(0, 1).all()
    )
    assert ((fidelity.preference_agreement >= 0.99) == (fidelity.gate == "passed")).all()
    # every gate on the study's set, timed, and again on fidelity.sets' rep60a, untimed; then both
    # sets' distinct pairs pooled (a row may be drawn into both)
    pooled = fidelity[fidelity.set == "pooled"].set_index("step")
    headline, extra = fidelity[fidelity.headline], fidelity[~fidelity.headline & (fidelity.set != "pooled")]
    assert set(headline.set) == {"main60"} and set(extra.set) == {"rep60a"}
    assert set(extra.step) == set(headline.step) == set(pooled.index)
    assert (headline.pairs == 12).all() and headline.speedup_vs_ort_fp32.notna().all()
    assert (extra.pairs == 8).all() and extra.speedup_vs_ort_fp32.isna().all()
    assert pooled.pairs.between(13, 20).all() and pooled.speedup_vs_ort_fp32.isna().all()
    flips = fidelity[fidelity.set != "pooled"].groupby("step").flipped
    assert (flips.max() <= pooled.flipped).all() and (pooled.flipped <= flips.sum()).all()
    # each agreement inside its exact interval over its pairs (full agreement on 12: [73.5%, 100%])
    assert (fidelity.agreement_lo <= fidelity.preference_agreement).all()
    assert (fidelity.preference_agreement <= fidelity.agreement_hi).all()
    assert (fidelity[fidelity.set != "pooled"].agreement_lo < 0.75).all()
    # reduced precision is measured against the same runtime in fp32
    own = headline.set_index("step").vs_own_fp32
    assert own["native precision=int8"] == "native precision=fp32"
    assert (smoke_run / "paper/figures/decomposition_gap.pdf").stat().st_size > 1000
    operators = pd.read_csv(smoke_run / "paper/tables/ort_operators.csv")
    matrix = operators[operators.op_type == "matrix products"]
    # a tiny model's matrix products take a host-dependent share (0.28 on an AVX-512 host, more on
    # AVX2 ones): at least the listed matrix operators' shares, at most all of the time
    listed = operators[operators.op_type.isin(MATRIX_OPS)].share.sum()
    assert list(matrix.model) == ["electra"] and listed > 0
    assert listed - 1e-9 <= matrix.share.item() <= 1
    assert operators[operators.op_type != "matrix products"].share.sum() == pytest.approx(1.0)
    gap = pd.read_csv(smoke_run / "paper/tables/decomposition_gap.csv")
    # the ORT levels' shares add up to the whole eager -> ORT gap (the transformers optimizer goes
    # beyond it). Two launches of a tiny model beside the unit tests may leave no gap to share.
    levels = gap[gap.step.str.match(r"ort_python graph=\w+$")]
    p50 = gap.set_index("step").p50_ms
    if p50["hf_eager precision=fp32"] > p50["ort_python graph=all"]:
        assert abs(levels.share_of_gap.sum() - 1) < 1e-9
    else:
        assert levels.share_of_gap.isna().all()
    assert gap.fraction_of_ceiling.notna().all()
    assert gap.fraction_in_launch.notna().all()
    # the rewritten export's own path starts from ORT all (listed once, on the ORT path)
    rewrite = gap[gap.path == "export rewrite"]
    assert list(rewrite.step) == [
        "ort_python graph=all optimizer=relative_shift",
        "ort_python graph=all optimizer=disentangled_bias",
        "ort_python graph=all optimizer=multihead_attention",
    ]
    assert (gap.step == "ort_python graph=all").sum() == 1
    assert (smoke_run / "paper/figures/decomposition.pdf").stat().st_size > 1000


def test_int8_sweep_gates_every_setting_and_agrees_with_the_timed_file(smoke_run):
    sweep = pd.read_csv(smoke_run / "paper/tables/int8_sweep.csv")
    assert list(sweep.model) == ["electra"] * 3 and set(sweep.matmuls) == {"all", "ffn", "attention"}
    assert (sweep.pairs == 12).all() and (
        (sweep.preference_agreement >= 0.99) == (sweep.gate == "passed")
    ).all()
    settings = sweep.set_index("matmuls")
    # 2 layers: the FFN's 2 and attention's 4 MatMuls with a weight each, all of them and the head's
    assert settings.loc["ffn"].quantized_matmuls == 4 and settings.loc["attention"].quantized_matmuls == 8
    assert settings.loc["all"].quantized_matmuls >= 12
    # the timed settings are the decomposition's int8 files (the default's, and one variant's own
    # group): the same quantizer, the same gate numbers
    fidelity = pd.read_csv(smoke_run / "paper/tables/fidelity.csv").query("headline").set_index("step")
    assert list(settings.timed[["all", "attention", "ffn"]]) == [True, True, False]
    for matmuls, step in (
        ("all", "ort_python graph=all precision=int8"),
        ("attention", "ort_python graph=all precision=int8 matmuls=attention"),
    ):
        gated = fidelity.loc[step]
        assert settings.loc[matmuls].preference_agreement == gated.preference_agreement
        assert settings.loc[matmuls].mean_abs_delta == pytest.approx(gated.mean_abs_delta, rel=1e-6)
    assert "(timed)" in (smoke_run / "paper/tables/int8_sweep.tex").read_text()


def test_launches_ran_interleaved_and_their_order_is_recorded(smoke_run):
    launches = pd.read_csv(smoke_run / "results/tables/latency/launches.csv")
    ran = launches[launches.status == "ok"].sort_values("order")
    assert ran.order.is_unique
    # Block by block, round-robin within a block (rmbench.plan.cells.launch_priorities; test_cells
    # checks the blocks and rounds): every cell's launch 1 starts before its launch 2. The rounds
    # of different cells may overlap here: the smoke profile runs two launches at a time, so a cell
    # whose gates pass later (the native engine's) starts after others have begun their second
    # round; the measuring profiles run one launch at a time, after every gate.
    starts = ran.pivot_table(index=["model", "device", "runtime", "set"], columns="launch", values="order")
    assert len(starts) >= 8 and (starts[1] < starts[2]).all()
    # seeded shuffle within a round: runtimes alternate rather than one runtime's launches in a row
    first = ran[ran.launch == 1].runtime.tolist()
    assert sum(a != b for a, b in itertools.pairwise(first)) > len(set(first))


def test_the_findings_word_every_verdict_of_the_tables(smoke_run):
    findings = (smoke_run / "paper/tables/findings.md").read_text()
    assert "(extended tier)" in findings  # the smoke profile runs both tiers
    sections = re.findall(r"^## (.*)$", findings, flags=re.MULTILINE)
    assert sections[:4] == [
        "Latency (CPU, headline set)",
        "The best CPU runtime",
        "The language: native against ORT-Python",
        "Replication of the latency verdicts",
    ]
    latency = pd.read_csv(smoke_run / "paper/tables/latency.csv").query("set == 'main60' and device == 'cpu'")
    lines = findings.split("## Latency (CPU, headline set)")[1].split("##")[0].strip().splitlines()
    assert len(lines) == len(latency)  # one line per runtime and model
    for row in latency[latency.verdict.notna()].itertuples():
        assert (
            f"- {row.model}, {row.runtime}: p50 {row.p50_ms:.1f} ms, {row.speedup:.2f}x the baseline"
            in findings
        )
    verdicts = pd.read_csv(smoke_run / "paper/tables/batching_verdicts.csv")
    assert all(statement in findings for statement in verdicts.statement)
    # the best CPU runtime: the lowest mean p50 of the latency table, per model
    best = pd.read_csv(smoke_run / "paper/tables/best_runtime.csv")
    assert set(best.model) == {"deberta", "electra", "qwen3"}
    for r in best.itertuples():
        cells = latency[latency.model == r.model]
        assert (
            r.best == cells.loc[cells.p50_ms.idxmin(), "runtime"] and f"- {r.model}: {r.best} (" in findings
        )
    # every CPU latency launch probed the GEMM ceiling (config.yaml: ceiling_probe), so the best
    # runtime's share of it is the mean of its own launches' shares
    launches = pd.read_csv(smoke_run / "results/tables/latency/launches.csv")
    for r in best.itertuples():
        own = launches[
            (launches.model == r.model)
            & (launches.runtime == r.best)
            & (launches.set == "main60")
            & (launches.device == "cpu")
            & (launches.status == "ok")
        ]
        assert own.fraction_of_ceiling.notna().all() and 0 < r.of_ceiling
        assert r.of_ceiling == pytest.approx(own.fraction_of_ceiling.mean())


def test_load_study_answers_every_request_with_a_reward_or_its_4xx(smoke_run):
    table = pd.read_csv(smoke_run / "paper/tables/load.csv")
    assert len(table) == len(planned("load")) and set(table.runtime) == {"batching_server", "fastapi"}
    # the trainers' own bodies on the decoder: OpenRLHF's templated query, verl's /classify text
    assert {"openrlhf", "verl"} <= set(table.variant.str.extract(r"body~(\w+)")[0].dropna())
    assert (table.launches_ok == 2).all() and (table.lost == 0).all() and (table.throughput_rps > 0).all()
    short_queue = table[table.variant.str.contains("queue_size~2")]
    assert (short_queue.retried_503 > 0).all()  # refused with Retry-After, retried, answered
    launches = pd.read_csv(smoke_run / "results/tables/load/launches.csv")
    assert (launches.status == "ok").all() and (
        launches.reward + launches.error + launches.gave_up == launches.requests
    ).all()
    malformed = launches[launches.variant.str.contains("malformed")]
    assert (malformed.malformed > 0).all() and (malformed.error == malformed.malformed).all()
    assert r"\label{tab:load}" in (smoke_run / "paper/tables/load.tex").read_text()


def test_colocation_scores_each_reply_beside_the_generator(smoke_run):
    table = pd.read_csv(smoke_run / "paper/tables/colocation.csv")
    cpu = table[table.device == "cpu"]
    cells = planned("colocation", device="cpu")
    assert set(cpu.runtime) == set(cells.runtime) and len(cells.runtime) >= 2
    assert (cpu.variant == "split~separate").all() and (cpu.launches_ok == 2).all()
    assert (cpu.e2e_rows_per_s > 0).all() and (cpu.gen_slowdown > 0).all() and (cpu.score_slowdown > 0).all()
    assert cpu[cpu.runtime != "hf_eager"].verdict.notna().all()  # end to end against eager
    launches = pd.read_csv(smoke_run / "results/tables/colocation/launches.csv")
    ok = launches[launches.status == "ok"]
    assert len(ok) == len(profile_cells("colocation")) and (ok.score_drift <= 1e-4).all()
    assert (ok.generated_tokens == 4 * 4).all()
    generator = json.loads((smoke_run / "results/generator/config.json").read_text())
    assert generator["model_type"] == "gpt2" and generator["n_layer"] == 1
    findings = (smoke_run / "paper/tables/findings.md").read_text()
    section = findings.split("## Co-location with a rollout generator")[1].split("##")[0]
    assert len(section.strip().splitlines()) == len(cells) and "rows/s end to end" in section


def test_paper_target_quotes_only_numbers_the_run_measured(smoke_run, smoke_printed):
    if shutil.which("latexmk") is None:
        assert "latexmk not found" in smoke_printed
    numbers = (smoke_run / "paper/tables/numbers.tex").read_text()
    defined = set(re.findall(r"\\rmset\{([^}]*)\}", numbers))
    quoted = quoted_keys([p.read_text() for p in text_files(smoke_run)])
    # the rule's log names every quoted number the run has no value for (smoke leaves cells out)
    log = (smoke_run / "results/logs/paper/numbers.log").read_text()
    assert f"{len(quoted - defined)} of the {len(quoted)} numbers the text quotes" in log
    assert all(f"  {key}\n" in log for key in quoted - defined)
    # Each latency key the text quotes resolves, unless the smoke profile ran no such cell (its
    # torch.compile runs in the compile study) or the table has no value there (two launches can
    # leave a conservative bound undefined: the text then shows "??", not a number nobody measured).
    latency = {key for key in quoted if key.startswith("latency/")}
    table = pd.read_csv(smoke_run / "paper/tables/latency.csv")
    table = table[table.set == "main60"].set_index(["model", "device", "runtime"])
    assert latency & defined
    for key in latency - defined:
        _, model, device, runtime, metric = key.split("/")
        if (model, device, runtime) not in table.index:
            assert runtime not in set(planned("latency", device=device, model=model).runtime), key
            continue
        column = metric.removesuffix("_ci") + "_lo" if metric.endswith("_ci") else metric
        assert pd.isna(table.loc[(model, device, runtime), column]), key
    # the language paragraph quotes its table's difference, interval and verdict for every model
    language = {key for key in quoted if key.startswith("language/")}
    assert {key.split("/")[1] for key in language} == {"deberta", "electra", "qwen3"}
    assert language <= defined, sorted(language - defined)


def test_the_paper_compiles_from_the_smoke_runs_tables(smoke_run):
    needs(shutil.which("latexmk") is not None, "no TeX here (bash envs/setup.sh --paper)")
    # the smoke run's `paper` built it (a failed build fails that run)
    pdf = smoke_run / "paper/main.pdf"
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 50_000


# The checks that run Snakemake on the smoke run come last. Those that change its files run on a
# copy of the whole run (made as it ends, in a thread beside these), in an order where none
# reruns the work of the one before: a tampered table, the tables made again, a cell forced.
SMOKE_NEEDS = LAST_STEP
SMOKE_COPIES = ("changed",)
FORCED_CELL = "results/cells/latency/electra/cpu/ort_python/set~main60/launch~2.json"


def tamper_and_run_the_notebook(workdir: Path) -> dict:
    table = workdir / "paper/tables/concurrency.csv"
    tampered = pd.read_csv(table)
    tampered.loc[0, "p50_ms"] *= 1.01
    table.unlink()  # a hard link to the smoke run's table: written anew, not in place
    tampered.to_csv(table, index=False)
    run = snakemake(workdir, "results/notebook/analysis.ipynb")
    return {"run": run, "log": (workdir / "results/logs/notebook.log").read_text()}


def regenerate_the_latency_tables(workdir: Path) -> dict:
    for stale in ("results/tables/latency", "paper/tables/latency.csv", "paper/tables/latency.tex"):
        shutil.rmtree(workdir / stale) if (workdir / stale).is_dir() else (workdir / stale).unlink()
    run = snakemake(workdir, "paper/tables/latency.csv")
    # read now: the cell forced next changes a launch file
    launches = [json.loads(p.read_text()) for p in (workdir / "results/cells/latency").rglob("launch~*.json")]
    table = workdir / "paper/tables/latency.csv"
    return {"run": run, "table": pd.read_csv(table) if table.exists() else None, "launches": launches}


def force_one_cell(workdir: Path) -> dict:
    before = (workdir / FORCED_CELL).stat().st_mtime
    run = snakemake(workdir, FORCED_CELL, "--forcerun", FORCED_CELL)
    return {"run": run, "before": before, "after": (workdir / FORCED_CELL).stat().st_mtime}


CHANGES = {
    "notebook": tamper_and_run_the_notebook,
    "regenerate": regenerate_the_latency_tables,
    "rerun": force_one_cell,
}


def start_after_smoke(copies: dict[str, Path]) -> dict:
    """conftest runs this in a thread once the smoke run's last step is done."""
    return scenario_outcomes(CHANGES, lambda _: copies["changed"])


def test_noop_rerun_is_quick(smoke_run):
    start = time.monotonic()
    run = snakemake(smoke_run, "all", "paper")
    assert run.returncode == 0 and "Nothing to be done" in run.stdout + run.stderr
    assert time.monotonic() - start < 30


def test_report_captions_every_figure_and_table(smoke_run):
    # As the README gives them: without --cores (jobs that take every core ask only when they run).
    run = snakemake(smoke_run, "--report", "report.html", cores=None)
    assert run.returncode == 0, run.stderr[-3000:]
    unlock = snakemake(smoke_run, "--unlock", cores=None)
    assert unlock.returncode == 0, unlock.stderr[-3000:]
    html = (smoke_run / "report.html").read_text()
    for name in (
        "latency.png",
        "batching.png",
        "concurrency.png",
        "latency.csv",
        "replication.csv",
        "roofline.csv",
        "ceiling_gap.csv",
    ):
        assert name in html, name
    assert "Per-row latency on the headline set" in html and "one row per cell" in html


def test_notebook_recomputes_the_statistics_and_stops_when_a_table_disagrees(smoke_run, followed):
    # `all` executed it
    executed = json.loads((smoke_run / "results/notebook/analysis.ipynb").read_text())
    outputs = [o for c in executed["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert not [o for o in outputs if o["output_type"] == "error"]
    printed = "".join("".join(o.get("text", "")) for o in outputs)
    for study in ("latency", "batching", "concurrency"):
        assert re.search(rf"{study}: \d+ cells agree", printed), printed[-2000:]
        assert (smoke_run / f"results/notebook/{study}.png").stat().st_size > 1000
    tampered = outcome(followed, "notebook")  # one value of the concurrency table, 1% off
    assert tampered["run"].returncode != 0 and "concurrency" in tampered["log"]


def test_paper_tables_regenerate_from_raw_launches_without_rerunning_any(followed):
    import numpy as np
    from scipy import stats

    seen = outcome(followed, "regenerate")
    run = seen["run"]
    assert run.returncode == 0, run.stderr[-2000:]
    assert "rule cell:" not in run.stdout + run.stderr and "launch_table" in run.stdout + run.stderr
    table = seen["table"].set_index(["model", "device", "set", "runtime"])

    # Independently of rmbench: each ok launch file's own per-row latencies -> its p50 -> the
    # cell's mean and 95% t-interval, and the speed-up against HF eager.
    p50s = {}
    for record in seen["launches"]:
        if record["status"] == "ok":
            cell = record["cell"]
            set_name, _, export = cell["params"].removeprefix("set~").partition("+optimizer~")
            runtime = cell["runtime"] + (f" optimizer={export}" if export else "")
            key = (cell["model"], cell["device"], set_name, runtime)
            p50s.setdefault(key, []).append(np.percentile(record["metrics"]["latencies_ms"], 50))
    # every cell that scored on the CPU (qwen3's on the fused graph are unsupported)
    cpu = table.query("device == 'cpu'")
    assert len(cpu) == len(planned("latency", device="cpu"))
    assert len(p50s) == (cpu.launches_ok > 0).sum()
    for key, values in p50s.items():
        row, x = table.loc[key], np.array(values)
        half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
        assert row.launches_ok == len(x)
        assert np.allclose(
            [row.p50_ms, row.p50_ms_lo, row.p50_ms_hi], [x.mean(), x.mean() - half, x.mean() + half]
        )
        if key[3] != "hf_eager":
            eager = np.mean(p50s[(*key[:3], "hf_eager")])
            assert np.isclose(row.speedup, eager / x.mean())


def test_one_cell_reruns_by_name(followed):
    seen = outcome(followed, "rerun")
    assert seen["run"].returncode == 0, seen["run"].stderr[-2000:]
    assert seen["after"] > seen["before"]
