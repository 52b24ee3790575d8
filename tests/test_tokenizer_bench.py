"""The tokenizer study's Hugging Face variants tokenize alike, and a launch times each of them."""

import pytest
from conftest import ADVERSARIAL
from rmbench.studies.tokenizer import HF_TOKENIZERS, hf_encoder, run_tokenizer_launch, tiktoken_encoder


# 64 cuts every long adversarial pair from both sides. Not 16: the tokenizers library's pair
# truncation takes 10-30 s on their 1,200-token pair at 16 (it grows as max_length shrinks).
@pytest.mark.parametrize("kind", ["electra", "deberta"])
@pytest.mark.parametrize("max_length", [64, 512])
def test_the_rust_backend_called_directly_gives_the_fast_tokenizers_ids(
    tokenizers, tiny_model, kind, max_length
):
    pairs = [(r["prompt"], r["response"]) for r in tiny_model["rows"]] + ADVERSARIAL
    fast = hf_encoder(tokenizers[kind], "hf_fast", max_length)
    backend = hf_encoder(tokenizers[kind], "hf_backend", max_length)
    for p, r in pairs:
        assert backend(p, r) == fast(p, r), (p[:40], r[:40])


@pytest.mark.parametrize("name", HF_TOKENIZERS)
def test_a_launch_times_every_pair(tiny_model, name):
    rows = tiny_model["rows"][:4]
    settings = {"repeat": 3, "warmup_rows": 1, "max_length": 64}
    record = run_tokenizer_launch({"runtime": name}, rows, tiny_model["model"], None, settings)
    metrics = record["metrics"]
    assert record["status"] == "ok" and metrics["n_rows"] == 4
    assert len(metrics["per_pair_us"]) == 4 and len(metrics["per_pass_us"]) == 3
    assert all(t > 0 for t in metrics["per_pair_us"]) and metrics["p50_us"] > 0


def test_an_unknown_tokenizer_is_named():
    with pytest.raises(ValueError, match="unknown tokenizer 'hf_rust'.*hf_backend"):
        run_tokenizer_launch(
            {"runtime": "hf_rust"}, [], None, None, {"repeat": 1, "warmup_rows": 0, "max_length": 8}
        )


@pytest.mark.parametrize("max_length", [64, 512])
def test_every_decoder_tokenizer_gives_the_fast_tokenizers_ids(tiny_decoder, max_length):
    """hf_backend, hf_slow and tiktoken (the template by its chat form) against hf_fast, on rows and
    adversarial text."""
    pairs = [(r["prompt"], r["response"]) for r in tiny_decoder["rows"]] + ADVERSARIAL
    fast = hf_encoder(tiny_decoder["model"], "hf_fast", max_length)
    others = {name: hf_encoder(tiny_decoder["model"], name, max_length) for name in ("hf_backend", "hf_slow")}
    others["tiktoken"] = tiktoken_encoder(tiny_decoder["model"], max_length)
    for p, r in pairs:
        want = fast(p, r)
        for name, encode in others.items():
            assert encode(p, r) == want, (name, p[:40], r[:40])
