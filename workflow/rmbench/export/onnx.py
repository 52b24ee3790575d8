"""ONNX export of a model folder and the parity gate that every ONNX file must pass."""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
from pathlib import Path

import numpy as np

from rmbench.errors import ParityError, RmbenchError
from rmbench.export.onnx_files import ATTENTION_EXPORTS
from rmbench.models.build import MAX_LENGTH, encode, load_model, load_tokenizer, token_ids
from rmbench.models.families import family_of_config


class _NoMistralRegexWarning(logging.Filter):
    """optimum loads the folder's tokenizer without load_tokenizer's fix_mistral_regex=False, and
    transformers 4.57.6 then warns of a Mistral split pattern on any folder it saved. No declared
    family is Mistral's, and the exporter's tokenizer copy is discarded."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "fix_mistral_regex" not in record.getMessage()


@contextlib.contextmanager
def _quiet_mistral_regex():
    logger, quiet = logging.getLogger("transformers.tokenization_utils_base"), _NoMistralRegexWarning()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def export_onnx(model_dir: Path, out_path: Path, opset: int, attention: str = "stock") -> None:
    """Exports a sequence classifier with dynamic batch and sequence axes (optimum's exporter)."""
    from optimum.exporters.onnx import main_export

    if attention not in ATTENTION_EXPORTS:
        raise ValueError(f"attention export must be one of {', '.join(ATTENTION_EXPORTS)}, not {attention}")
    if attention == "stock":
        rewrite = contextlib.nullcontext()
    else:
        from rmbench.export.relative_shift import patched

        rewrite = patched(attention)
    out_path = Path(out_path)
    with tempfile.TemporaryDirectory() as tmp, rewrite, _quiet_mistral_regex():
        main_export(
            str(model_dir),
            output=tmp,
            task="text-classification",
            opset=opset,
            device="cpu",
            do_validation=False,
        )
        out_path.parent.mkdir(parents=True, exist_ok=True)
        for f in Path(tmp).glob("model.onnx*"):  # model.onnx and any external-data file
            shutil.move(str(f), out_path.parent / f.name.replace("model.onnx", out_path.name))


class FusionUnsupported(Exception):
    """onnxruntime.transformers' optimizer has no fusions for this model family."""


def optimize_for_transformers(src: Path, dst: Path, model_dir: Path) -> dict:
    """The exported model after onnxruntime.transformers' offline fusions (attention, skip layer
    norm, bias GELU, embed layer norm) for the optimizer model type the family declares, at the
    model's own head count and width; returns how many of each fused operator it made (DeBERTa's relative attention has no
    fusion there, so its count says what did apply)."""
    import json

    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    config = json.loads((Path(model_dir) / "config.json").read_text())
    model_type = family_of_config(config)["ort_optimizer"]
    if model_type is None:
        raise FusionUnsupported(
            f"onnxruntime.transformers' optimizer has no model type for {config['architectures'][0]} "
            "(its family declares ort_optimizer: None)"
        )
    fusions = FusionOptions(model_type)
    # Symbolic shape inference ran > 10 min at 13 GB on DeBERTa-v3 without finishing; without it
    # DeBERTa takes seconds, and ELECTRA gets the same fusions as with it.
    fusions.enable_shape_inference = False
    optimized = optimize_model(
        str(src),
        model_type=model_type,
        num_heads=config["num_attention_heads"],
        hidden_size=config["hidden_size"],
        opt_level=0,  # offline fusions only; the session applies its own levels when it loads the file
        optimization_options=fusions,
    )
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    optimized.save_model_to_file(str(dst))
    return {op: int(n) for op, n in optimized.get_fused_operator_statistics().items()}


# ONNX Runtime's graph optimization levels (the decomposition study steps through them):
# basic folds constants and drops redundant nodes, extended fuses (attention, GELU, layer norm),
# all adds layout transformations.
GRAPH_LEVELS = ("disabled", "basic", "extended", "all")


# How a session runs the graph's nodes: one after another (each using the intra-op pool), or
# independent nodes at once on an inter-op pool (the batching study's thread probe compares them).
EXECUTION_MODES = ("sequential", "parallel")


def ort_session(
    onnx_path: Path,
    threads: int,
    device: str = "cpu",
    graph: str = "all",
    profile_prefix: str | None = None,
    execution: str = "sequential",
    inter_op_threads: int = 1,
    operators: Path | None = None,
):
    """An InferenceSession with the project's thread settings (one intra-op pool, sequential, one
    inter-op thread, unless told otherwise) and a graph optimization level (GRAPH_LEVELS); with
    profile_prefix, ORT's own profiler on (every operator's time, written by session.end_profiling());
    with operators, the native engine's operator library registered (exports that call its
    operators: onnx_files.NATIVE_OPERATOR_EXPORTS)."""
    import onnxruntime as ort

    if graph not in GRAPH_LEVELS:
        raise ValueError(f"graph optimization level must be one of {', '.join(GRAPH_LEVELS)}, not {graph}")
    if execution not in EXECUTION_MODES:
        raise ValueError(f"execution mode must be one of {', '.join(EXECUTION_MODES)}, not {execution}")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = inter_op_threads
    options.execution_mode = (
        ort.ExecutionMode.ORT_PARALLEL if execution == "parallel" else ort.ExecutionMode.ORT_SEQUENTIAL
    )
    level = ort.GraphOptimizationLevel
    options.graph_optimization_level = {
        "disabled": level.ORT_DISABLE_ALL,
        "basic": level.ORT_ENABLE_BASIC,
        "extended": level.ORT_ENABLE_EXTENDED,
        "all": level.ORT_ENABLE_ALL,
    }[graph]
    if operators:
        options.register_custom_ops_library(str(operators))
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    providers = ["CUDAExecutionProvider"] if device == "cuda" else ["CPUExecutionProvider"]
    try:
        return ort.InferenceSession(str(onnx_path), options, providers=providers)
    except Exception as error:  # onnxruntime raises its own Fail
        if "rmbench:" in str(error) and not operators:
            raise RmbenchError(
                f"{onnx_path} calls the native engine's operators (domain rmbench): give the session "
                "its operator library, results/native/bin/librmbench_ops.so (rule native_build)"
            ) from error
        raise


def ort_feed(session, encoded) -> dict:
    """The tokenizer's arrays that the session takes, as int64."""
    names = {i.name for i in session.get_inputs()}
    return {k: np.asarray(v, dtype=np.int64) for k, v in encoded.items() if k in names}


def ort_run(session, encoded) -> np.ndarray:
    """The session's scores for rows already tokenized (one per row)."""
    return session.run(None, ort_feed(session, encoded))[0][:, 0]


def ort_scores(
    session, tokenizer, pairs: list[tuple[str, str]], max_length: int = MAX_LENGTH, padding: str = "longest"
) -> np.ndarray:
    return ort_run(session, encode(tokenizer, pairs, "np", max_length, padding=padding))


def batches(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def parity_report(
    model_dir: Path,
    onnx_path: Path,
    rows: list[dict],
    reference: list[float],
    tolerance: float,
    batch_size: int,
    threads: int,
    min_score_std: float,
    operators: Path | None = None,
) -> dict:
    """Compares ONNX Runtime with the PyTorch reference on every row, alone and in padded batches
    (with the native engine's operator library where the export calls its operators)."""
    tokenizer = load_tokenizer(model_dir)
    session = ort_session(onnx_path, threads, operators=operators)
    pairs = [(r["prompt"], r["response"]) for r in rows]
    ref = np.asarray(reference, dtype=np.float64)
    single = np.array([ort_scores(session, tokenizer, [p])[0] for p in pairs])
    batched = np.concatenate([ort_scores(session, tokenizer, b) for b in batches(pairs, batch_size)])
    err_single, err_batched = np.abs(single - ref), np.abs(batched - ref)
    worst = int(np.argmax(np.maximum(err_single, err_batched)))
    report = {
        "model_dir": str(model_dir),
        "onnx": str(onnx_path),
        "rows": len(rows),
        "tolerance": tolerance,
        "max_abs_err_single": float(err_single.max()),
        "max_abs_err_batched": float(err_batched.max()),
        "batch_size": batch_size,
        "worst_row": rows[worst]["id"],
        "reference_score_std": float(ref.std()),
        "min_score_std": min_score_std,
    }
    agrees = max(report["max_abs_err_single"], report["max_abs_err_batched"]) <= tolerance
    # Scores that hardly vary across rows would let any output pass: such a gate proves nothing.
    report["passed"] = bool(agrees and report["reference_score_std"] >= min_score_std)
    return report


def parity_failure(report: dict) -> str | None:
    """Why a parity report fails its gate, in words; None when it passed."""
    if report["reference_score_std"] < report["min_score_std"]:
        return (
            f"reference scores of {report['model_dir']} barely vary across rows (std "
            f"{report['reference_score_std']:.3g} < {report['min_score_std']:g}): parity would be "
            "meaningless; for a synthetic model raise head_init_std"
        )
    if not report["passed"]:
        return (
            f"ONNX parity gate failed for {report['onnx']}: max |ORT - PyTorch| = "
            f"{report['max_abs_err_single']:.3g} (single rows), {report['max_abs_err_batched']:.3g} "
            f"(batches of {report['batch_size']}) > tolerance {report['tolerance']:g}; worst row "
            f"{report['worst_row']}"
        )
    return None


def check_parity(report: dict) -> None:
    """Stops the pipeline when the export fails its gate: every launch would load it."""
    failure = parity_failure(report)
    if failure:
        raise ParityError(failure)


def reference_scores(
    model_dir: Path, rows: list[dict], threads: int, seconds: list[float] | None = None
) -> list[float]:
    """PyTorch fp32 eager scores, one row at a time: the reference every runtime is checked against.
    Each row's time, tokenizing included, is appended to `seconds` where given."""
    import time

    import torch

    torch.set_num_threads(threads)
    tokenizer = load_tokenizer(model_dir)
    model = load_model(model_dir)
    scores = []
    with torch.inference_mode():
        for r in rows:
            started = time.perf_counter()
            enc = encode(tokenizer, [(r["prompt"], r["response"])], "pt")
            scores.append(float(model(**enc).logits[0, 0]))
            if seconds is not None:
                seconds.append(time.perf_counter() - started)
    return scores


def first_difference(got: list[int], want: list[int]) -> int | None:
    """The first position where two id lists differ (the shorter one's length if one is a
    prefix of the other), or None where they are equal."""
    if got == want:
        return None
    return next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))


def token_mismatch(tokenizer, row_name: str, got: list[int], want: list[int]) -> str | None:
    """Where the native ids of one row depart from the HF tokenizer's, in words: the row, the
    first differing position, and the pieces there on both sides."""
    at = first_difference(got, want)
    if at is None:
        return None

    def pieces(ids):
        return " ".join(tokenizer.convert_ids_to_tokens(ids[at : at + 3])) or "(end)"

    return f"{row_name} from token {at}: native {pieces(got)!r}, HF {pieces(want)!r}"


def native_parity_report(
    runtime, rows_by_set: dict, reference: list[float], tolerance: float, batch_size: int
) -> dict:
    """The native engine against the HF fast tokenizer (token ids, every row of every set) and
    against the PyTorch reference (scores on main60, alone and in length-aware batches)."""
    tokenizer = load_tokenizer(runtime.model_dir)
    token_mismatches = []
    for name, rows in rows_by_set.items():
        pairs = [(r["prompt"], r["response"]) for r in rows]
        native = runtime.encodings(pairs)
        for row, (p, r), got in zip(rows, pairs, native, strict=True):
            want = token_ids(tokenizer, p, r, runtime.max_length)
            mismatch = token_mismatch(tokenizer, f"{name}:{row['id']}", got["input_ids"], want)
            if mismatch:
                token_mismatches.append(mismatch)
    main = rows_by_set["main60"]
    pairs = [(r["prompt"], r["response"]) for r in main]
    ref = np.asarray(reference)
    single = np.asarray(runtime.score(pairs))
    batched = runtime.run(
        pairs, "--batching", "length-aware", "--batch-size", str(batch_size), "--warmup", "0"
    )
    batched = np.asarray([r["score"] for r in batched["rows"]])
    report = {
        "binary": str(runtime.binary),
        "rows_tokenized": sum(len(rows) for rows in rows_by_set.values()),
        "token_mismatches": token_mismatches,
        "rows_scored": len(main),
        "tolerance": tolerance,
        "max_abs_err_single": float(np.abs(single - ref).max()),
        "max_abs_err_batched": float(np.abs(batched - ref).max()),
        "batch_size": batch_size,
    }
    worst = max(report["max_abs_err_single"], report["max_abs_err_batched"])
    report["passed"] = bool(not token_mismatches and worst <= tolerance)
    return report


def check_native_parity(report: dict) -> None:
    if report["token_mismatches"]:
        raise ParityError(
            f"native tokenizer disagrees with the HF tokenizer on {len(report['token_mismatches'])} rows; "
            + "; ".join(report["token_mismatches"][:5])
        )
    if not report["passed"]:
        raise ParityError(
            f"native scores differ from PyTorch by {report['max_abs_err_single']:.3g} (single rows), "
            f"{report['max_abs_err_batched']:.3g} (batches of {report['batch_size']}) > {report['tolerance']:g}"
        )
