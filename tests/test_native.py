"""The native engine: built by CMake here, id-exact tokenizers, score parity, same ORT library."""

import json
import os
import subprocess

import numpy as np
import pytest
from conftest import ADVERSARIAL, sample_set_pairs, tie_pairs
from rmbench.export.onnx import first_difference, reference_scores, token_mismatch
from rmbench.models.build import load_tokenizer
from rmbench.models.data import split_dialogue
from rmbench.models.families import write_family
from rmbench.models.synthetic import generate_split
from rmbench.runtimes.batching import make_batches, padding_waste
from rmbench.runtimes.native import NativeError, NativeRuntime


def native_tokens(binary, folder, pairs, max_length=512, **options):
    engine = NativeRuntime(folder, None, "cpu", 1, max_length, {"binary": binary, **options})
    engine.load()
    return engine.encodings(pairs)


@pytest.mark.parametrize("kind", ["electra", "deberta-test", "deberta-default"])
@pytest.mark.parametrize("which", ["sample_sets", "adversarial"])
def test_token_ids_match_the_hf_tokenizer(binary, tokenizers, config_deberta_tokenizers, kind, which):
    """Identical to the fast tokenizer the runtimes use. The one exception: where HF's fast
    DeBERTa tokenizer departs from SentencePiece itself (its slow tokenizer), on a text whose
    normalization ends in a space (a final U+FEFF or a literal metaspace), native follows
    SentencePiece."""
    from transformers import AutoTokenizer

    pairs = sample_set_pairs() if which == "sample_sets" else ADVERSARIAL
    folder = tie_folders(tokenizers, config_deberta_tokenizers)[kind]
    fast = load_tokenizer(folder)
    slow = AutoTokenizer.from_pretrained(folder, use_fast=False)
    native = native_tokens(binary, folder, pairs)
    follows_sentencepiece = []
    for (p, r), got in zip(pairs, native, strict=True):
        want = fast(p, r, truncation=True, max_length=512)
        if got["input_ids"] != want["input_ids"]:
            assert got["input_ids"] == slow(p, r, truncation=True, max_length=512)["input_ids"], (
                kind,
                p[:60],
                r[:60],
            )
            follows_sentencepiece.append(p)
        elif "token_type_ids" in want:
            assert got["token_type_ids"] == want["token_type_ids"]
    expected = (
        [p for p, r in ADVERSARIAL if p.endswith("\ufeff") or r.endswith("▁")]
        if kind.startswith("deberta") and which == "adversarial"
        else []
    )
    assert follows_sentencepiece == expected


def tie_folders(tokenizers, config_deberta_tokenizers) -> dict:
    return {
        "electra": tokenizers["electra"],
        "deberta-test": tokenizers["deberta"],
        "deberta-default": config_deberta_tokenizers["default"],
        "deberta-smoke": config_deberta_tokenizers["smoke"],
    }


@pytest.mark.parametrize("which", ["electra", "deberta-test", "deberta-default", "deberta-smoke"])
@pytest.mark.parametrize("word_cache", [10000, 0])
def test_token_ids_match_hf_where_segmentations_tie(
    binary, tokenizers, config_deberta_tokenizers, which, word_cache
):
    """Id for id with the fast tokenizer on text built to tie, word by word and whole."""
    folder = tie_folders(tokenizers, config_deberta_tokenizers)[which]
    pairs = tie_pairs()
    fast = load_tokenizer(folder)
    native = native_tokens(binary, folder, pairs, word_cache=word_cache)
    for (p, r), got in zip(pairs, native, strict=True):
        want = fast(p, r, truncation=True, max_length=512)["input_ids"]
        assert got["input_ids"] == want, (which, p, r, first_difference(got["input_ids"], want))


@pytest.mark.parametrize("which", ["deberta-test", "deberta-default", "deberta-smoke"])
def test_tie_corpus_holds_ties_that_sentencepiece_breaks_otherwise(
    tokenizers, config_deberta_tokenizers, which
):
    """The corpus above tests something: libsentencepiece itself (its Python binding, the
    engine's old path) segments some of its rows differently from Hugging Face."""
    import sentencepiece

    folder = tie_folders(tokenizers, config_deberta_tokenizers)[which]
    spm = sentencepiece.SentencePieceProcessor(model_file=str(folder / "spm.model"))
    fast = load_tokenizer(folder)
    texts = [t for pair in tie_pairs() for t in pair]
    differ = sum(spm.encode(t) != fast(t, add_special_tokens=False)["input_ids"] for t in texts)
    assert differ >= 10, differ


def test_parity_gate_names_the_row_and_first_differing_token(tokenizers):
    """What the gate reports for a row whose ids differ: here libsentencepiece's own ids, which
    break a tie otherwise, against the fast tokenizer's."""
    import sentencepiece

    spm = sentencepiece.SentencePieceProcessor(model_file=str(tokenizers["deberta"] / "spm.model"))
    fast = load_tokenizer(tokenizers["deberta"])
    text = next(
        t
        for pair in tie_pairs()
        for t in pair
        if spm.encode(t) != fast(t, add_special_tokens=False)["input_ids"]
    )
    got, want = spm.encode(text), fast(text, add_special_tokens=False)["input_ids"]
    at = first_difference(got, want)
    assert got[:at] == want[:at] and got[at] != want[at]
    message = token_mismatch(fast, "main60:17", got, want)
    assert message.startswith(f"main60:17 from token {at}: native '{fast.convert_ids_to_tokens(got[at])}")
    assert token_mismatch(fast, "main60:17", want, want) is None
    assert first_difference([1, 2], [1, 2, 3]) == 2


def test_sentencepiece_word_cache_changes_no_id(binary, tokenizers, tmp_path):
    """Word by word with the cache (the default) gives the whole text's ids, twice over (the
    second pass from the cache); --word-cache 0 sends the whole text to the library."""
    pairs = sample_set_pairs()[:120] + ADVERSARIAL
    ids = lambda encodings: [e["input_ids"] for e in encodings]
    whole = ids(native_tokens(binary, tokenizers["deberta"], pairs, word_cache=0))
    assert ids(native_tokens(binary, tokenizers["deberta"], pairs + pairs)) == whole + whole
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "0", "prompt": "a b a", "response": "b"}) + "\n")
    modes = []
    for cache in ("10000", "0"):
        out = tmp_path / f"tokenize{cache}.json"
        subprocess.run(
            [binary, "--tokenizer", tokenizers["deberta"], "--input", rows, "--output", out]
            + ["--tokenize-only", "--repeat", "2", "--word-cache", cache],
            check=True,
        )
        found = json.loads(out.read_text())
        assert found["options"]["word_cache"] == int(cache) and len(found["tokenize"]["pass_us"]) == 2
        modes.append(found["tokenizer_words"])
    assert modes == ["by word, cache of 10000 words", "whole text (word cache off)"]


@pytest.mark.parametrize("max_length", [8, 16, 33, 64])
def test_truncation_matches_hf_at_every_split(binary, tokenizers, max_length):
    words = generate_split(5, 40)
    pairs = [split_dialogue(d["chosen"]) for d in words]
    hf = load_tokenizer(tokenizers["electra"])
    for (p, r), got in zip(pairs, native_tokens(binary, tokenizers["electra"], pairs, max_length)):
        assert got["input_ids"] == hf(p, r, truncation=True, max_length=max_length)["input_ids"]


def native_runtime(tiny_model, binary, **options):
    runtime = NativeRuntime(
        tiny_model["model"], tiny_model["onnx"], "cpu", 1, 512, {"binary": binary} | options
    )
    runtime.load()
    return runtime


def test_scores_match_pytorch_single_and_batched(binary, tiny_model):
    rows = tiny_model["rows"]
    pairs = [(r["prompt"], r["response"]) for r in rows]
    reference = np.array(reference_scores(tiny_model["model"], rows, threads=1))
    runtime = native_runtime(tiny_model, binary)
    assert np.abs(np.array(runtime.score(pairs)) - reference).max() <= 1e-4
    for strategy in ("naive", "length-aware", "token-budget"):
        result = runtime.run(pairs, "--batch-size", "4", "--batching", strategy, "--token-budget", "1200")
        assert np.abs(np.array([r["score"] for r in result["rows"]]) - reference).max() <= 1e-4
        assert max(len(b) for b in result["batches"]) > 1


def test_score_keeps_one_engine_loaded_and_answers_row_by_row(binary, tiny_model):
    """score() goes through one resident engine (--serve): the caller that sends replies as they
    come (co-location, the service) pays no model load per row."""
    pairs = [(r["prompt"], r["response"]) for r in tiny_model["rows"]]
    runtime = native_runtime(tiny_model, binary)
    batch = [r["score"] for r in runtime.run(pairs, "--warmup", "0")["rows"]]
    one_by_one = [runtime.score([pair])[0] for pair in pairs]
    engine = runtime.resident
    assert one_by_one == batch and runtime.score(pairs[:3]) == batch[:3]
    assert runtime.resident is engine and engine.poll() is None  # the same process throughout
    assert runtime.describe()["ort_version"]  # from its ready line
    runtime.close()
    assert engine.returncode == 0 and runtime.resident is None
    # an engine that died between calls is reported with its exit code, and the next call restarts it
    runtime.score(pairs[:1])
    runtime.resident.kill()
    runtime.resident.wait()
    with pytest.raises(NativeError, match="exited -9"):
        runtime.score(pairs[:1])
    assert runtime.score(pairs[:1]) == batch[:1]
    runtime.close()
    # a line that is no row ends it with its exit code and the line's number
    proc = subprocess.run(
        [str(binary), "--tokenizer", str(tiny_model["model"]), "--model", str(tiny_model["onnx"]), "--serve"],
        input=json.dumps({"id": "1", "prompt": "p", "response": "r"}) + "\n{oops\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 4 and "stdin:2" in proc.stderr
    assert [json.loads(line).get("id") for line in proc.stdout.splitlines()] == [None, "1"]  # ready, row 1


def test_zero_copy_and_preallocation_switches_keep_scores(binary, tiny_model):
    pairs = [(r["prompt"], r["response"]) for r in tiny_model["rows"]]
    on = native_runtime(tiny_model, binary, zero_copy="on", prealloc="on").time_rows_alone(pairs, 1)
    off = native_runtime(tiny_model, binary, zero_copy="off", prealloc="off").time_rows_alone(pairs, 1)
    assert on["scores"] == off["scores"]
    # The IoBinding path (auto: CUDA with zero-copy) forced on here, on the CPU.
    bound = native_runtime(tiny_model, binary, zero_copy="on", io_binding="on")
    assert bound.time_rows_alone(pairs, 1)["scores"] == on["scores"]
    assert bound.describe()["options"]["io_binding"] is True
    runtime = native_runtime(tiny_model, binary, zero_copy="off", prealloc="off")
    runtime.time_rows_alone(pairs, 1)
    assert runtime.describe()["options"]["zero_copy"] is False
    assert runtime.describe()["options"]["io_binding"] is False  # auto on the CPU: off


def test_both_languages_time_a_rows_tokenizing_and_engine_call_apart(binary, tiny_model):
    """The language table splits native's difference from ORT-Python into the same two parts in
    both: tokenizing and the engine's call, each inside the row's own latency."""
    from rmbench.runtimes.ort_python import OrtPythonRuntime

    pairs = [(r["prompt"], r["response"]) for r in tiny_model["rows"]]
    python = OrtPythonRuntime(tiny_model["model"], tiny_model["onnx"], "cpu", 1, 512)
    python.load()
    measured = {"native": native_runtime(tiny_model, binary).time_rows_alone(pairs, 1)}
    measured["ort_python"] = python.time_rows_alone(pairs, 1)
    for runtime, m in measured.items():
        parts = np.array(m["tokenize_us"]) / 1e3 + np.array(m["infer_ms"])
        assert len(parts) == len(pairs) and (np.array(m["tokenize_us"]) > 0).all(), runtime
        assert (parts <= np.array(m["latencies_ms"]) + 1e-6).all() and (np.array(m["infer_ms"]) > 0).all()
    assert measured["ort_python"]["scores"] == pytest.approx(measured["native"]["scores"], abs=1e-4)
    assert measured["ort_python"]["scores"] == [python.score([pair])[0] for pair in pairs]  # same calls


def test_same_onnxruntime_library_and_version_as_python(binary, tiny_model):
    from pathlib import Path

    import onnxruntime

    runtime = native_runtime(tiny_model, binary)
    runtime.score([("a", "b")])
    described = runtime.describe()
    assert described["ort_version"] == onnxruntime.__version__
    python_lib = max((Path(onnxruntime.__file__).parent / "capi").glob("libonnxruntime.so*"))
    assert described["ort_library"] == str(python_lib.resolve())


# ONNX Runtime 1.30 keeps its telemetry off by itself where one of these is set (CI hosts and its own
# test runs), whatever ORT_DISABLE_TELEMETRY says: the control clears them.
ONNX_RUNTIME_CI_MARKERS = {
    "CI", "TF_BUILD", "GITHUB_ACTIONS", "GITLAB_CI", "CIRCLECI", "TRAVIS", "JENKINS_URL", "CODEBUILD_BUILD_ID",
    "BUILDKITE", "TEAMCITY_VERSION", "APPVEYOR", "BITBUCKET_BUILD_NUMBER", "ORT_RUNNING_UNIT_TESTS",
}  # fmt: skip


def test_onnx_runtime_telemetry_is_off_unless_asked_for(binary, tiny_model, tmp_path):
    """ONNX Runtime 1.30 starts a telemetry thread in every process that creates an environment,
    and leaves a mat-debug-<pid>.log in the temporary folder: the engine turns it off by itself,
    and ORT_DISABLE_TELEMETRY=0 (the control, config onnxruntime_telemetry) keeps it."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "1", "prompt": "p", "response": "r"}) + "\n")
    args = ["--model", str(tiny_model["onnx"]), "--tokenizer", str(tiny_model["model"]), "--input", str(rows)]
    traces = {}
    for setting in ("0", None):
        folder = tmp_path / f"tmp-{setting}"
        folder.mkdir()
        unset = ONNX_RUNTIME_CI_MARKERS | {"ORT_DISABLE_TELEMETRY"}
        env = {k: v for k, v in os.environ.items() if k not in unset} | {"TMPDIR": str(folder)}
        if setting is not None:
            env["ORT_DISABLE_TELEMETRY"] = setting
        run = subprocess.run(
            [str(binary), *args, "--output", str(tmp_path / "o.json")],
            env=env,
            capture_output=True,
            check=False,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        traces[setting] = list(folder.glob("mat-debug-*.log"))
        if setting == "0" and not traces[setting]:
            pytest.skip("ONNX Runtime started no telemetry here even when asked: nothing to turn off")
    assert len(traces["0"]) == 1, traces
    assert traces[None] == [], traces


def test_batches_match_the_python_strategies(binary, tiny_model):
    pairs = [split_dialogue(d["chosen"]) for d in generate_split(8, 37)]
    runtime = native_runtime(tiny_model, binary)
    lengths = [len(t["input_ids"]) for t in native_tokens(binary, tiny_model["model"], pairs)]
    plans = [("none", 1, 0.02), ("naive", 4, 0.02), ("length_aware", 8, 0.02), ("token_budget", 8, 0.02)]
    plans += [("waste_bound", 8, waste) for waste in (0.0, 0.1, 0.3, 1.0)]  # from no batch to most
    bounded = set()
    for strategy, size, waste in plans:
        args = ["--batch-size", str(size), "--token-budget", "2048", "--max-waste", repr(waste)]
        native = runtime.run(pairs, "--batching", strategy, *args)
        assert native["batches"] == make_batches(lengths, strategy, size, 2048, waste), (strategy, waste)
        if strategy == "waste_bound":
            bounded.add(len(native["batches"]))
            assert padding_waste(lengths, native["batches"]) <= waste + 1e-12
    assert len(bounded) > 1  # the bound changes the batches
    assert padding_waste(lengths, make_batches(lengths, "length_aware", 8)) < padding_waste(
        lengths, make_batches(lengths, "naive", 8)
    )


def test_exit_codes_and_messages(binary, tiny_model, tmp_path):
    good = tmp_path / "rows.jsonl"
    good.write_text(json.dumps({"id": "1", "prompt": "p", "response": "r"}) + "\n")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "1", "prompt": "p", "response": "r"}) + "\n{oops\n")
    base = [str(binary), "--tokenizer", str(tiny_model["model"]), "--output", str(tmp_path / "o.json")]

    def run(*args):
        proc = subprocess.run([*base, *args], capture_output=True, text=True, check=False)
        return proc.returncode, proc.stderr

    assert run("--input", str(good), "--model", str(tmp_path / "none.onnx"))[0] == 3
    code, message = run("--input", str(bad), "--model", str(tiny_model["onnx"]))
    assert code == 4 and "bad.jsonl:2" in message
    code, message = run("--input", str(good), "--model", str(tiny_model["onnx"]), "--frobnicate", "1")
    assert code == 2 and "--frobnicate" in message
    code, message = run("--input", str(good), "--model", str(tiny_model["onnx"]), "--io-binding", "yes")
    assert code == 2 and "auto|on|off" in message
    code, message = run("--input", str(good), "--model", str(tiny_model["onnx"]), "--device", "cuda")
    assert code == 7 and "CUDAExecutionProvider" in message


def test_model_tokenizer_mismatch(binary, tiny_model, tmp_path):
    """A vocabulary whose ids lie beyond the 30,522 rows of the model's embedding."""
    folder = tmp_path / "big-vocab"
    folder.mkdir()
    fillers = [f"filler{i}" for i in range(31000)]
    (folder / "vocab.txt").write_text(
        "\n".join([*fillers, "[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello"]) + "\n"
    )
    write_family(folder, "electra-large")  # as the tokenizer rule names a folder's family
    runtime = NativeRuntime(folder, tiny_model["onnx"], "cpu", 1, 512, {"binary": binary})
    runtime.load()
    with pytest.raises(NativeError, match="exited 5.*mismatch"):
        runtime.score([("hello", "hello")])
