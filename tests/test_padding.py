"""A row's score may not move with its batch: alone, in a batch padded on the right and in one
padded on the left, on every runtime that batches, for an encoder and a decoder (users report
reward scores that change with the batch size)."""

import numpy as np
import pytest
from rmbench.models.build import PaddingSideError
from rmbench.models.families import family_of_folder
from rmbench.runtimes import runtime_class

TOLERANCE = 1e-4  # the parity gate's
BATCHING_RUNTIMES = {  # runtime -> options
    "hf_eager": {},
    # one static compile per engine (one batch shape each), the cheapest; the loads share Inductor's
    # cache (the scores are checked here, not the compile)
    "torch_compile": {"dynamic": "false", "cache": "warm"},
    "ort_python": {},
    "openvino": {},
}


# The encoder's compiled batches are checked in tests/test_batching.py; here torch.compile takes
# the decoder, whose two padding sides each compile their own graph (about 20 s each on 2 cores).
# Its rows alone are scored eagerly instead of compiling a third time: compiled and eager scores
# agree within the parity tolerance (tests/test_runtimes.py), so a batch may not move either.
ALONE_ON = {"torch_compile": "hf_eager"}
CASES = [
    (model, runtime)
    for model in ("tiny_model", "tiny_decoder")
    for runtime in BATCHING_RUNTIMES
    if (model, runtime) != ("tiny_model", "torch_compile")
]


@pytest.mark.parametrize(("model_fixture", "runtime"), CASES)
def test_scores_do_not_move_with_the_batch_or_its_padding_side(request, model_fixture, runtime, tmp_path):
    model = request.getfixturevalue(model_fixture)
    pairs = [(r["prompt"], r["response"]) for r in model["rows"][:6]]
    cls = runtime_class(runtime)
    onnx = model["onnx"] if cls.needs_onnx else None
    declared = family_of_folder(model["model"])

    def engine(side: str):
        options = BATCHING_RUNTIMES[runtime] | {"padding_side": side, "cache_root": str(tmp_path)}
        loaded = cls(model["model"], onnx, "cpu", 1, 512, options)
        loaded.load()
        return loaded

    # One engine per declared side; the rows alone (no padding) on the first of them.
    engines = {side: engine(side) for side in declared["padding_sides"]}
    try:
        first = engines[declared["padding_sides"][0]]
        if runtime in ALONE_ON:
            first = runtime_class(ALONE_ON[runtime])(model["model"], None, "cpu", 1, 512, {})
            first.load()
        alone = np.asarray([first.score([p]) for p in pairs], dtype=float).ravel()
        assert np.std(alone) > 0.05  # the rows score differently: the check can fail
        for side, loaded in engines.items():
            batched = np.asarray(loaded.score(pairs), dtype=float)
            assert np.abs(batched - alone).max() <= TOLERANCE, (side, batched - alone)
    finally:
        for loaded in engines.values():
            loaded.close()
    for side in {"left", "right"} - set(declared["padding_sides"]):
        # an encoder padded on the left moves its scores (absolute positions, first-token head):
        # its cells are recorded as unsupported, and the runtime refuses such a batch
        assert "scores would move" in cls.family_reason(declared, {"padding_side": side})
        loaded = engine(side)
        with pytest.raises(PaddingSideError, match=f"may not pad on the {side}"):
            loaded.score(pairs)
        loaded.close()


def test_an_encoder_padded_on_the_left_would_move_its_scores(tiny_model):
    """Why encoders declare right padding only: the same batch padded on the left scores otherwise."""
    import torch
    from rmbench.models.build import encode, load_model, load_tokenizer

    tokenizer, model = load_tokenizer(tiny_model["model"]), load_model(tiny_model["model"])
    pairs = [(r["prompt"], r["response"]) for r in tiny_model["rows"][:4]]
    with torch.inference_mode():
        right = model(**encode(tokenizer, pairs, "pt")).logits[:, 0]
        prompts, replies = zip(*pairs)  # the same batch padded on the left, behind the family's back
        batch = tokenizer(list(prompts), list(replies), truncation=True, padding=True, padding_side="left")
        left = model(**batch.convert_to_tensors("pt")).logits[:, 0]
    assert (right - left).abs().max() > 0.1
