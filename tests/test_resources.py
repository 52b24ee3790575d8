"""Memory requests by model size (rmbench.plan.resources): weights counted from the shape each
model entry names, checked against the sizes the model cards publish."""

import json

import pytest
from rmbench.models.families import family
from rmbench.plan.resources import (
    BASE_MB,
    FP32_BYTES,
    WEIGHT_COPIES,
    job_mem_mb,
    model_shape,
    parameter_count,
)


def hub(architecture: str) -> dict:
    return {"name": architecture, "architecture": architecture, "source": "hub"}


@pytest.mark.parametrize(
    "architecture, published, embeddings",
    [
        # the cards: DeBERTa-v3-large "304M backbone parameters" plus a 131M embedding layer;
        # Qwen3-0.6B "0.44B non-embedding"; ELECTRA-large 335M; Llama-3.1-8B 8.03B, of which
        # 525M is the language-model head a reward model replaces with one logit
        ("deberta-v3-large", 304e6, True),
        ("qwen3-0.6b", 0.44e9, True),
        ("electra-large", 335e6, False),
        ("llama-3.1-8b", 8.03e9 - 128256 * 4096, False),
    ],
)
def test_weights_counted_from_the_published_shape_match_the_model_cards(architecture, published, embeddings):
    shape = model_shape(hub(architecture))
    count = parameter_count(shape)
    if embeddings:  # the card gives the count without the token embeddings
        count -= shape["vocab_size"] * (shape.get("embedding_size") or shape["hidden_size"])
    assert count == pytest.approx(published, rel=0.02)


def test_a_toy_model_asks_for_the_base_and_a_full_8b_for_its_weights():
    toy = {"architecture": "qwen3-0.6b", "source": "synthetic", "layers": 2, "hidden_size": 64}
    toy |= {"num_attention_heads": 4, "intermediate_size": 128}
    assert BASE_MB <= job_mem_mb(toy, "launch") <= BASE_MB + 500
    weights_mb = 7.5e9 * FP32_BYTES / 2**20
    assert job_mem_mb(hub("llama-3.1-8b"), "launch") >= WEIGHT_COPIES["launch"] * weights_mb
    four_layers = {"architecture": "llama-3.1-8b", "source": "synthetic", "layers": 4}
    assert job_mem_mb(four_layers, "launch") < job_mem_mb(hub("llama-3.1-8b"), "launch") / 3
    assert job_mem_mb(four_layers, "export") > job_mem_mb(four_layers, "launch")


def test_a_local_folder_is_sized_by_its_own_config(tmp_path):
    """A user's folder may be any depth or width of its family: its config.json says which."""
    own = dict(family("llama-3.1-8b")["config"]) | {"num_hidden_layers": 2, "hidden_size": 256}
    own |= {"intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64}
    own["architectures"] = [family("llama-3.1-8b")["class"]]
    (tmp_path / "config.json").write_text(json.dumps(own))
    local = {"architecture": "llama-3.1-8b", "source": "local", "local_path": str(tmp_path)}
    # q, o: 256 x 256; k, v: 256 x 128; gate, up, down: 256 x 512; the 128,256-token embedding
    per_layer = 2 * 256 * 256 + 2 * 256 * 128 + 3 * 256 * 512
    assert parameter_count(model_shape(local)) == 2 * per_layer + 128256 * 256
    # a folder not written yet (a stand-in) is sized as the entry declares it
    declared = local | {"local_path": str(tmp_path / "not-yet"), "layers": 2, "hidden_size": 256}
    assert parameter_count(model_shape(declared)) != parameter_count(model_shape(local))
