"""The native engine on a decoder reward model: its byte-level BPE and its rows (Qwen3's own
template, compiled into the engine's chat form) id-exact with the Hugging Face tokenizer, rows the
form would render differently refused, its scores with ONNX Runtime's from Python, alone and
batched."""

import json
import shutil
import subprocess

import numpy as np
import pytest
from conftest import ADVERSARIAL, sample_set_pairs, tie_pairs
from rmbench.export.onnx import reference_scores, token_mismatch
from rmbench.models.build import chat_messages, load_tokenizer, token_ids
from rmbench.models.chat_form import ChatFormError, compile_form, folder_renderer, mismatch
from rmbench.runtimes import Unsupported
from rmbench.runtimes.native import NativeRuntime
from test_byte_bpe import UNICODE
from test_native import native_tokens

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


def assert_id_exact_or_refused(binary, model_dir, pairs, rewrites, max_length=512):
    """Every row the engine's chat form renders as the template does is id-exact with the HF
    tokenizer; the others are exactly the rows `rewrites` names, and the engine refuses them."""
    engine = NativeRuntime(model_dir, None, "cpu", 1, max_length, {"binary": binary})
    engine.load()
    jinja, form, _ = engine.chat
    refused = [pair for pair in pairs if mismatch(form, jinja, chat_messages(*pair))]
    assert refused == [pair for pair in pairs if rewrites(chat_messages(*pair))]
    rendered = [pair for pair in pairs if pair not in refused]
    tokenizer = load_tokenizer(model_dir)
    mismatches = [
        token_mismatch(tokenizer, f"row {i}", got["input_ids"], token_ids(tokenizer, p, r, max_length))
        for i, ((p, r), got) in enumerate(zip(rendered, engine.encodings(rendered), strict=True))
    ]
    assert [m for m in mismatches if m] == []
    for pair in refused:
        with pytest.raises(Unsupported, match="1 of 1 rows refused"):
            engine.encodings([pair])
        with pytest.raises(ChatFormError):
            engine.score([pair])


def qwen3_rewrites(messages) -> bool:
    """Qwen3's template moves an assistant turn's text up to `</think>` into a think block."""
    return any("</think>" in m["content"] for m in messages if m["role"] == "assistant")


@pytest.mark.parametrize("which", ["sample_sets", "adversarial", "ties"])
def test_native_bpe_rows_are_id_exact_with_hf(binary, tiny_decoder, which):
    pairs = {"sample_sets": sample_set_pairs, "adversarial": lambda: ADVERSARIAL_ROWS, "ties": tie_pairs}[
        which
    ]()
    assert_id_exact_or_refused(binary, tiny_decoder["model"], pairs, qwen3_rewrites)


def with_context(model_dir, folder, context: int | None):
    """A copy of a decoder's folder whose tokenizer names `context` as its model's (None: none)."""
    shutil.copytree(model_dir, folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("model_max_length")
    (folder / "tokenizer_config.json").write_text(
        json.dumps(config | ({"model_max_length": context} if context else {}))
    )
    return folder


@pytest.mark.parametrize("context", [3, 17, 64, 100_000, None])
def test_a_chat_row_is_cut_from_the_end_past_its_models_context_only(binary, tiny_decoder, context, tmp_path):
    """The configured cut (512) is a text pair's: a chat row keeps its dialogue up to the context
    its tokenizer names, natively as in transformers, and past it loses its end."""
    folder = with_context(tiny_decoder["model"], tmp_path / "model", context)
    pairs = sample_set_pairs()[:40] + [("x" * 100_000, "y " * 50_000)]
    tokenizer = load_tokenizer(folder)
    native = native_tokens(binary, folder, pairs, max_length=512)
    whole = [token_ids(tokenizer, p, r, None) for p, r in pairs]
    assert max(map(len, whole)) > 512  # rows the pair families' cut would have cut
    for want, got in zip(whole, native, strict=True):
        assert got["input_ids"] == want[: context or len(want)]


def test_a_decoder_launch_counts_no_cut_row_and_an_encoder_launch_its_cut_ones(tiny_model, tiny_decoder):
    """The launch metric rows_cut: rows that lost tokens to the limit (a pair's 512, a chat
    row's context)."""
    from rmbench.models.build import folder_row_limit
    from rmbench.studies.launch import Workload

    for built, name, cut in ((tiny_model, "tiny", True), (tiny_decoder, "tiny_qwen3", False)):
        tokenizer = load_tokenizer(built["model"])
        rows = [{"prompt": p, "response": r} for p, r in sample_set_pairs()[:30]] + [
            {"prompt": "long " * 2000, "response": "reply"}
        ]
        for row in rows:
            row[f"tokens_{name}"] = len(token_ids(tokenizer, row["prompt"], row["response"], None))
        work = Workload(rows, name, built["model"], {}, folder_row_limit(built["model"], 512))
        expected = sum(row[f"tokens_{name}"] > 512 for row in rows) if cut else 0
        assert work.rows_cut() == expected and (expected > 0) == cut


def test_native_scores_a_decoder_as_pytorch_does_alone_and_batched(binary, tiny_decoder):
    assert_scores_as_pytorch(binary, tiny_decoder)


def assert_scores_as_pytorch(binary, built: dict):
    """The engine's scores of a built model's rows (conftest.tiny_reward_model), one at a time
    through the resident engine and in batches of 5, against PyTorch's."""
    rows = built["rows"]
    pairs = [(r["prompt"], r["response"]) for r in rows]
    ref = np.asarray(reference_scores(built["model"], rows, threads=1))
    engine = NativeRuntime(built["model"], built["onnx"], "cpu", 1, 512, {"binary": binary})
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
    assert_malformed_rows_refused(binary, tiny_decoder["model"], tmp_path)


def assert_malformed_rows_refused(binary, model_dir, tmp_path):
    """The engine itself, called by hand, refuses a lone surrogate and invalid UTF-8 naming the line."""
    rows, tokens, form = tmp_path / "rows.jsonl", tmp_path / "tokens.jsonl", tmp_path / "chat_form.json"
    form.write_text(json.dumps(compile_form(folder_renderer(model_dir))))
    command = [str(binary), "--tokenizer", str(model_dir), "--chat-form", str(form), "--input", str(rows)]
    command += ["--dump-tokens", str(tokens)]
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


def with_template(tiny_decoder, folder, template: str):
    shutil.copytree(tiny_decoder["model"], folder)
    (folder / "chat_template.jinja").write_text(template)
    return folder


def test_a_hub_models_own_chat_template_is_rendered_id_exact(binary, tiny_decoder, tmp_path):
    """Another template than the family's (as a hub model brings its own): its turns' markup, an
    upper-cased role, trimmed contents, the EOS token after the reply."""
    template = (
        "{% for m in messages %}<|im_start|>### {{ m['role'] | upper }}:\n{{ m['content'] | trim }}\n"
        "{% endfor %}{{ eos_token }}"
    )
    folder = with_template(tiny_decoder, tmp_path / "model", template)
    pairs = sample_set_pairs()[:60] + ADVERSARIAL_ROWS
    assert_id_exact_or_refused(binary, folder, pairs, lambda messages: False)


def test_a_template_the_form_cannot_express_is_refused_naming_why(binary, tiny_decoder, tmp_path):
    numbered = "{% for m in messages %}{{ loop.index }}. {{ m['content'] }}\n{% endfor %}"
    engine = NativeRuntime(
        with_template(tiny_decoder, tmp_path / "model", numbered), None, "cpu", 1, 512, {"binary": binary}
    )
    with pytest.raises(Unsupported, match="depends on the turns around them"):
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
