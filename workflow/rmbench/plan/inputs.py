"""The files a job needs: the rules' input functions, as functions of the validated config.

workflow/rules/common.smk wraps each in a one-line input function. A job is its wildcards as a
dict (study, model, device, runtime, params, launch where its rule has them), so a test can ask
what any cell of any config needs without Snakemake.
"""

from __future__ import annotations

from rmbench.export.onnx_files import (
    ATTENTION_EXPORTS,
    NATIVE_OPERATOR_EXPORTS,
    OPTIMIZER_SUFFIX,
    device_export,
    onnx_file,
)
from rmbench.models.families import STAND_IN_PATH, model_family, resolved_export
from rmbench.plan.cells import gated_params, parse_params, precision, runtime_options, study_config
from rmbench.runtimes import family_reason, native_engine_needed, runtime_class

FIDELITY_PATH = "results/fidelity/{model}/{runtime}/{params}.json"
FP32_SCORES_PATH = "results/fidelity/fp32/{model}/{set}.json"  # what every gate compares with
# An untimed launch that fills Inductor's on-disk cache for a compile-study cell timed with `cache:
# warm` (its record is the output): otherwise the first timed launch of a fresh tree finds it empty.
# Launch 0: run_cell.py's record of a launch, not a timed one.
WARM_CACHE_PATH = (
    "results/inductor-cache/warmed/{study}/{model}/{device}/{runtime}/{params}/launch~{launch}.json"
)
NATIVE_BINARY = "results/native/bin/rmscore"
NATIVE_OPERATORS = "results/native/bin/librmbench_ops.so"  # the engine's operators, for other sessions


def operator_library(optimizer: str) -> dict:
    """The native engine's operator library, where a Python session loads an export that calls
    its operators (parity gate, operator profile); else nothing."""
    return {"operators": NATIVE_OPERATORS} if optimizer in NATIVE_OPERATOR_EXPORTS else {}


def job_options(config: dict, job: dict) -> dict:
    """The runtime's options in the job's study, with the job's variant over them. A fidelity
    gate has no study: its runtime is a decomposition step."""
    return runtime_options(config, job.get("study", "decomposition"), job["runtime"], job["params"])


def unsupported_reason(config: dict, job: dict) -> str | None:
    """Why a job's runtime cannot score its model's family (then it is recorded, untimed, and
    needs only the model and rows), or None."""
    declared = model_family(config, job["model"])
    return family_reason(job["runtime"], declared, job_options(config, job))


def runs_native_engine(config: dict, cell: dict) -> bool:
    """Whether a cell's runtime runs the native engine (its declaration) on a family the engine
    has a tokenizer for."""
    declared = model_family(config, cell["model"])
    return native_engine_needed(cell["runtime"], job_options(config, cell)) and bool(
        declared["native_tokenizer"]
    )


def native_inputs(config: dict, job: dict) -> dict:
    """The native engine and its parity gate, for the jobs of a runtime that runs it."""
    if not native_engine_needed(job["runtime"], job_options(config, job)):
        return {}
    if unsupported_reason(config, job):
        return {}
    return {
        "binary": NATIVE_BINARY,
        "native_parity": f"results/correctness/{job['model']}_native.json",
    }


def scoring_inputs(config: dict, job: dict) -> dict:
    """The model and rows a scoring job needs and, where its runtime loads ONNX (its declaration,
    Runtime.onnx_needed), its variant's ONNX file behind the fp32 parity gate: the export, its int8
    copy (of one group of MatMuls if the variant names one), or another export (optimizer)."""
    model, params = job["model"], parse_params(job["params"])
    inputs = {"model": f"results/models/{model}", "rows": f"results/data/{params['set']}.jsonl"}
    if unsupported_reason(config, job):
        return inputs
    options = job_options(config, job)
    if runtime_class(job["runtime"]).onnx_needed(options):
        # a variant's, else the runtime's own option (`family`: the family's own export); on CUDA
        # without the engine's CPU-only operators
        export = resolved_export(options.get("optimizer", "none"), model_family(config, model))
        optimizer = device_export(export, job.get("device", "cpu"))
        inputs["onnx"] = onnx_file(model, precision(job["params"]), optimizer, params.get("matmuls"))
        inputs["parity"] = f"results/correctness/{model}.json"
        if optimizer in ATTENTION_EXPORTS:  # another export: its own parity gate too
            inputs["export_parity"] = f"results/correctness/{model}{OPTIMIZER_SUFFIX[optimizer]}.json"
        inputs |= operator_library(optimizer)
        if optimizer == "transformers":  # the fused graph: a gate it may fail (its launches say so)
            inputs["fused_parity"] = f"results/correctness/{model}.opt.json"
    return inputs | native_inputs(config, job)


def fidelity_inputs(config: dict, job: dict) -> dict:
    """A fidelity gate's scoring inputs and the fp32 scores it compares with."""
    fp32 = FP32_SCORES_PATH.format(model=job["model"], set=parse_params(job["params"])["set"])
    return scoring_inputs(config, job) | {"fp32_scores": fp32}


def cell_inputs(config: dict, job: dict) -> dict:
    """A launch's inputs: the model; rows but for the gemm study (shapes from the model's config);
    the native engine where it runs; and for a scoring study what it scores with and checks
    against."""
    inputs = {"model": f"results/models/{job['model']}"}
    if job["study"] == "gemm":
        return inputs
    set_name = parse_params(job["params"])["set"]
    inputs["rows"] = f"results/data/{set_name}.jsonl"
    inputs |= native_inputs(config, job)
    if job["study"] == "tokenizer":
        return inputs
    # Scoring cells: behind the parity gate, checked against the reference; a reduced-precision
    # cell against its own scores from the fidelity gate (which compares them with fp32).
    inputs |= scoring_inputs(config, job)
    if precision(job["params"]) == "fp32":
        inputs["reference"] = f"results/reference/{job['model']}/{set_name}.json"
    else:
        inputs["reference"] = FIDELITY_PATH.format(**job)
    if job["study"] == "colocation":  # the rollout generator beside the scorer
        inputs["generator"] = "results/generator"
    return inputs


def timed_cell_inputs(config: dict, job: dict) -> dict:
    """A timed launch's inputs; a compile-study cell with a warm cache also waits for the launch
    that warms it."""
    inputs = cell_inputs(config, job)
    if job["study"] == "compile" and parse_params(job["params"]).get("cache") == "warm":
        inputs["warm_cache"] = WARM_CACHE_PATH.format(**job | {"launch": 0})
    return inputs


def synthetic_inputs(config: dict, model: str) -> dict:
    """What a model built here (synthetic, or a stand-in's folder) needs first: the SentencePiece
    model a SentencePiece family trains."""
    if model_family(config, model)["tokenizer"] == "sentencepiece":
        return {"spm": f"results/tokenizers/spm/{model}.model"}
    return {}


def tokenizer_inputs(config: dict, model: str) -> dict:
    """A model's tokenizer rule waits for a synthetic model's SentencePiece model, or for the
    folder a stand-in's rule writes; a hub or a user's local model needs nothing built."""
    cfg = config["models"][model]
    if cfg.get("stand_in"):
        return {"folder": STAND_IN_PATH.format(model=model)}
    return synthetic_inputs(config, model) if cfg["source"] == "synthetic" else {}


def decomposition_inputs(config: dict, cells: list[dict], studies: set[str]) -> dict:
    """The decomposition tables' inputs: the study's launches, statistics and table, every
    reduced-precision step's fidelity reports (`cells`: the run's), the GEMM ceiling where the
    gemm study runs (`studies`: the enabled ones), and ORT's operator profile per model on the
    CPU."""
    inputs = {
        "summary": "results/tables/decomposition/summary.csv",
        "launches": "results/tables/decomposition/launches.csv",
        "comparisons": "results/tables/decomposition/comparisons.csv",
        "table": "paper/tables/decomposition.csv",
        "fidelity": sorted(
            {
                FIDELITY_PATH.format(**cell | {"params": gated})
                for cell in cells
                if cell["study"] == "decomposition" and precision(cell["params"]) != "fp32"
                for gated in gated_params(config, cell["params"])
            }
        ),
    }
    if "gemm" in studies:
        inputs["gemm"] = "results/tables/gemm/summary.csv"
    study = study_config(config, "decomposition")
    if "cpu" in study["devices"]:
        inputs["operators"] = [f"results/decomposition/operators/{model}.json" for model in study["models"]]
    return inputs
