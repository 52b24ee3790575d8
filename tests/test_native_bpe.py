"""The native engine on a decoder reward model: its byte-level BPE and ChatML rows id-exact with
the Hugging Face tokenizer, its scores with ONNX Runtime's from Python, alone and batched."""

import shutil
import subprocess

import numpy as np
import pytest
from conftest import ADVERSARIAL, tie_pairs
from rmbench.export import reference_scores, token_mismatch
from rmbench.models import load_tokenizer, token_ids
from rmbench.runtimes import Unsupported
from rmbench.runtimes.native import NativeRuntime
from test_byte_bpe import UNICODE
from test_native import native_tokens, sample_set_pairs

HH = "\n\nHuman: {}\n\nAssistant:"
# Rows no generated data holds: 100k characters, only whitespace, NUL bytes, every Unicode trap of
# the tokenizer's own check as a prompt and as a reply, and hh-rlhf prompts with odd turns.
ADVERSARIAL_ROWS = [
    *ADVERSARIAL,
    *[(HH.format(text), text) for text in UNICODE],
    ("x" * 100_000, "y " * 50_000),
    (HH.format("   \n\t "), " \u3000 \n"),
    ("\x00", "\x00\x00 nul \x00"),
    ("before the turns" + HH.format("q") + " a\n\nHuman: again" + HH.format(""), "reply"),
    ("\n\nAssistant: starts with the assistant\n\nHuman: then\n\nAssistant:", "r"),
    ("\n\nHuman:\n\nAssistant:", ""),
]


@pytest.mark.parametrize("which", ["sample_sets", "adversarial", "ties"])
def test_native_bpe_rows_are_id_exact_with_hf(binary, tiny_decoder, which):
    pairs = {"sample_sets": sample_set_pairs, "adversarial": lambda: ADVERSARIAL_ROWS, "ties": tie_pairs}[
        which
    ]()
    tokenizer = load_tokenizer(tiny_decoder["model"])
    native = native_tokens(binary, tiny_decoder["model"], pairs)
    mismatches = [
        token_mismatch(tokenizer, f"row {i}", got["input_ids"], token_ids(tokenizer, p, r, 512))
        for i, ((p, r), got) in enumerate(zip(pairs, native, strict=True))
    ]
    assert [m for m in mismatches if m] == []


@pytest.mark.parametrize("max_length", [3, 17, 64, 512, 100_000])
def test_native_bpe_truncates_from_the_end_as_hf(binary, tiny_decoder, max_length):
    pairs = sample_set_pairs()[:40] + [("x" * 100_000, "y " * 50_000)]
    tokenizer = load_tokenizer(tiny_decoder["model"])
    native = native_tokens(binary, tiny_decoder["model"], pairs, max_length=max_length)
    for (p, r), got in zip(pairs, native, strict=True):
        assert got["input_ids"] == token_ids(tokenizer, p, r, max_length)


def test_native_scores_a_decoder_as_pytorch_does_alone_and_batched(binary, tiny_decoder):
    rows = tiny_decoder["rows"]
    pairs = [(r["prompt"], r["response"]) for r in rows]
    ref = np.asarray(reference_scores(tiny_decoder["model"], rows, threads=1))
    engine = NativeRuntime(tiny_decoder["model"], tiny_decoder["onnx"], "cpu", 1, 512, {"binary": binary})
    engine.load()
    try:
        alone = np.asarray(engine.score(pairs))
        batched = engine.run(pairs, "--batching", "naive", "--batch-size", "5", "--warmup", "0")
    finally:
        engine.close()
    assert np.abs(alone - ref).max() <= 1e-4
    assert np.abs(np.asarray([r["score"] for r in batched["rows"]]) - ref).max() <= 1e-4
    assert batched["inputs"] == ["input_ids", "attention_mask"]  # no token types fed to a decoder
    assert np.std(ref) > 0.05


def test_lone_surrogates_and_bad_utf8_are_refused_naming_the_row(binary, tiny_decoder, tmp_path):
    rows, tokens = tmp_path / "rows.jsonl", tmp_path / "tokens.jsonl"
    command = [
        str(binary),
        "--tokenizer",
        str(tiny_decoder["model"]),
        "--input",
        str(rows),
        "--dump-tokens",
        str(tokens),
    ]
    for body, line in (
        (
            b'{"id": "a", "prompt": "ok", "response": "fine"}\n{"id": "b", "prompt": "\\ud800", "response": "x"}\n',
            2,
        ),
        (b'{"id": "c", "prompt": "\xff\xfe", "response": "x"}\n', 1),
    ):
        rows.write_bytes(body)
        run = subprocess.run(command, capture_output=True, text=True, check=False)
        assert run.returncode == 4 and f"{rows}:{line}: malformed JSON" in run.stderr, run.stderr


def test_a_hub_models_own_chat_template_is_refused_not_rendered_wrongly(binary, tiny_decoder, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_decoder["model"], folder)
    (folder / "chat_template.jinja").write_text("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    engine = NativeRuntime(folder, tiny_decoder["onnx"], "cpu", 1, 512, {"binary": binary})
    with pytest.raises(Unsupported, match="renders the fixed ChatML form only"):
        engine.load()


def test_an_input_the_engine_cannot_fill_is_named(binary, tiny_decoder, tmp_path):
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(tiny_decoder["onnx"]))
    model.graph.input.append(helper.make_tensor_value_info("rope_scale", TensorProto.INT64, ["batch"]))
    path = tmp_path / "extra.onnx"
    onnx.save(model, str(path))
    engine = NativeRuntime(tiny_decoder["model"], path, "cpu", 1, 512, {"binary": binary})
    engine.load()
    with pytest.raises(
        Exception, match="takes the input 'rope_scale', which the engine does not know how to fill"
    ):
        engine.score([("a", "b")])
    engine.close()
