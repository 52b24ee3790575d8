"""Which files a job needs (rmbench.plan.inputs, the rules' input functions), without Snakemake."""

from rmbench.plan import inputs
from test_cells import tier_config

CONFIG = tier_config(extended=True)


def job(study, model, runtime, params="set~main60", device="cpu", launch="1"):
    return {
        "study": study,
        "model": model,
        "device": device,
        "runtime": runtime,
        "params": params,
        "launch": launch,
    }


def test_a_native_latency_launch_waits_for_the_build_both_parity_gates_and_the_reference():
    needed = inputs.timed_cell_inputs(CONFIG, job("latency", "deberta", "native"))
    assert needed == {
        "model": "results/models/deberta",
        "rows": "results/data/main60.jsonl",
        "binary": inputs.NATIVE_BINARY,
        "native_parity": "results/correctness/deberta_native.json",
        "onnx": "results/onnx/deberta/model.mha.onnx",  # config.yaml: optimizer family, DeBERTa's
        "parity": "results/correctness/deberta.json",
        "export_parity": "results/correctness/deberta.mha.json",
        "operators": inputs.NATIVE_OPERATORS,
        "reference": "results/reference/deberta/main60.json",
    }
    stock = inputs.cell_inputs(CONFIG, job("latency", "deberta", "native", "set~main60+optimizer~none"))
    assert stock["onnx"] == "results/onnx/deberta/model.onnx"
    assert "export_parity" not in stock and "operators" not in stock


def test_a_pytorch_launch_needs_no_onnx_file_and_no_build():
    needed = inputs.cell_inputs(CONFIG, job("latency", "electra", "hf_eager"))
    assert set(needed) == {"model", "rows", "reference"}


def test_another_export_brings_its_own_parity_gate():
    fused = inputs.cell_inputs(
        CONFIG, job("latency", "electra", "ort_python", "set~main60+optimizer~transformers")
    )
    assert fused["fused_parity"] == "results/correctness/electra.opt.json"
    assert fused["onnx"] != "results/onnx/electra/model.onnx"
    shifted = inputs.scoring_inputs(CONFIG, job("latency", "deberta", "openvino"))
    assert shifted["export_parity"] == "results/correctness/deberta.relshift.json"
    assert "operators" not in shifted  # ONNX's own operators: no library to load


def test_python_onnx_runtime_on_the_engines_operator_export_loads_the_engines_library():
    cell = job("latency", "deberta", "ort_python")  # config.yaml: optimizer family, DeBERTa's
    needed = inputs.cell_inputs(CONFIG, cell)
    assert needed["onnx"] == "results/onnx/deberta/model.mha.onnx"
    assert needed["operators"] == inputs.NATIVE_OPERATORS
    assert "binary" not in needed  # the library, not the engine
    on_gpu = inputs.cell_inputs(CONFIG, job("latency", "deberta", "ort_python", device="cuda"))
    assert on_gpu["onnx"] == "results/onnx/deberta/model.relshift.onnx"  # the operator has no CUDA kernel
    assert "operators" not in on_gpu


def test_each_family_loads_its_own_export_under_optimizer_family():
    files = {m: inputs.cell_inputs(CONFIG, job("latency", m, "native"))["onnx"] for m in ("electra", "qwen3")}
    assert files == {
        "electra": "results/onnx/electra/model.opt.onnx",
        "qwen3": "results/onnx/qwen3/model.onnx",
    }
    electra = inputs.cell_inputs(CONFIG, job("latency", "electra", "native"))
    assert electra["fused_parity"] == "results/correctness/electra.opt.json" and "operators" not in electra


def test_a_runtime_that_cannot_score_a_family_gets_only_the_model_and_rows():
    cell = job("latency", "qwen3", "ort_python", "set~main60+optimizer~transformers")
    assert inputs.unsupported_reason(CONFIG, cell)
    assert set(inputs.scoring_inputs(CONFIG, cell)) == {"model", "rows"}


def test_a_reduced_precision_launch_is_checked_against_its_own_fidelity_gate():
    cell = job("decomposition", "electra", "ort_python", "set~main60+precision~int8")
    needed = inputs.cell_inputs(CONFIG, cell)
    assert needed["reference"] == inputs.FIDELITY_PATH.format(**cell)
    assert "int8" in needed["onnx"]
    gate = {k: cell[k] for k in ("model", "runtime", "params")}  # a gate has no study
    assert inputs.fidelity_inputs(CONFIG, gate)["fp32_scores"] == "results/fidelity/fp32/electra/main60.json"


def test_the_gemm_and_tokenizer_studies_need_no_scoring_files():
    assert set(inputs.cell_inputs(CONFIG, job("gemm", "electra", "ort_mlas"))) == {"model"}
    tokenizer = inputs.cell_inputs(CONFIG, job("tokenizer", "electra", "native"))
    assert set(tokenizer) == {"model", "rows", "binary", "native_parity"}


def test_a_warm_cache_compile_launch_waits_for_the_launch_that_warms_it():
    cell = job("compile", "electra", "torch_compile", "set~main60+dynamic~none+bucket~0+cache~warm")
    assert inputs.timed_cell_inputs(CONFIG, cell)["warm_cache"].endswith("launch~0.json")
    assert "warm_cache" not in inputs.cell_inputs(CONFIG, cell)


def test_only_sentencepiece_families_train_a_tokenizer_first():
    assert inputs.tokenizer_inputs(CONFIG, "deberta") == {"spm": "results/tokenizers/spm/deberta.model"}
    assert inputs.tokenizer_inputs(CONFIG, "electra") == {}
