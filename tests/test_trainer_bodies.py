"""The service scores what trainers send: OpenRLHF's templated /get_reward bodies and verl's
/classify bodies, built as their clients build them, answered with the model's score of the exact
text (what the trainer's own server computes); hh-rlhf bodies as before; odd bodies a 4xx or a
score by the documented rule (rmbench.service.rendered), never a 500."""

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient
from rmbench.models.build import load_model, load_tokenizer
from rmbench.runtimes import runtime_class
from rmbench.service.app import create_app
from rmbench.studies.load import BODIES, openrlhf_sample, verl_sample

# hf_eager scores as PyTorch does; the exported engines within the parity gate's tolerance.
TOLERANCE = {"hf_eager": 1e-5, "ort_python": 1e-4, "native": 1e-4}
PROMPT = "\n\nHuman: What is 2+2?\n\nAssistant: 4.\n\nHuman: And times 3?\n\nAssistant:"
REPLIES = ["It is 12.", "", "Text with <|im_end|> inside it, and <think> too."]


def exact_scores(folder, texts: list[str], special_tokens: bool) -> np.ndarray:
    """The model's scores of the texts as they stand (OpenRLHF's serve_rm: special tokens not
    added; vLLM's /classify: added), each alone, in PyTorch."""
    tokenizer, model = load_tokenizer(folder), load_model(folder)
    with torch.inference_mode():
        return np.array(
            [
                model(**tokenizer([t], add_special_tokens=special_tokens, return_tensors="pt"))
                .logits[0, 0]
                .item()
                for t in texts
            ]
        )


def openrlhf_body(tokenizer, reply: str) -> dict:
    """OpenRLHF's body with --apply_chat_template (rmbench.studies.load: as the load study sends it)."""
    return BODIES["openrlhf"].body(openrlhf_sample(tokenizer, PROMPT, reply))


def verl_text(tokenizer, reply: str) -> str:
    return verl_sample(tokenizer, PROMPT, reply)


@pytest.fixture(params=["hf_eager", "ort_python", "native"])
def served_decoder(request, tiny_decoder):
    options = {"binary": str(request.getfixturevalue("binary"))} if request.param == "native" else {}
    cls = runtime_class(request.param)
    runtime = cls(
        tiny_decoder["model"], tiny_decoder["onnx"] if cls.needs_onnx else None, "cpu", 1, 512, options
    )
    runtime.load()
    yield request.param, TestClient(create_app(runtime))
    runtime.close()


def test_openrlhf_and_verl_bodies_score_the_exact_text(served_decoder, tiny_decoder):
    name, client = served_decoder
    tokenizer = load_tokenizer(tiny_decoder["model"])
    bodies = [openrlhf_body(tokenizer, reply) for reply in REPLIES]
    texts = [body["query"][0] for body in bodies]
    answers = [client.post("/get_reward", json=body) for body in bodies]
    assert [a.status_code for a in answers] == [200] * len(bodies), [a.text for a in answers]
    assert all(a.json()["extra_logs"]["scored_as"] == ["templated"] for a in answers)
    got = np.array([a.json()["rewards"][0] for a in answers])
    assert (
        np.abs(got - exact_scores(tiny_decoder["model"], texts, special_tokens=False)).max()
        <= TOLERANCE[name]
    )

    inputs = [verl_text(tokenizer, reply) for reply in REPLIES]
    answer = client.post("/classify", json={"model": "rm", "input": inputs, "activation": False})
    assert answer.status_code == 200, answer.text
    probs = np.array([entry["probs"][-1] for entry in answer.json()["data"]])
    expected = exact_scores(tiny_decoder["model"], inputs, special_tokens=True)
    assert np.abs(probs - expected).max() <= TOLERANCE[name]
    sigmoid = client.post("/classify", json={"input": inputs[0]}).json()["data"][-1]["probs"][-1]
    assert sigmoid == pytest.approx(1 / (1 + np.exp(-expected[0])), abs=TOLERANCE[name])
    embedded = client.post("/v1/embeddings", json={"input": inputs}).json()["data"][-1]["embedding"][-1]
    assert embedded == pytest.approx(expected[-1], abs=TOLERANCE[name])


def test_hh_rlhf_bodies_and_odd_templated_bodies(served_decoder, tiny_decoder):
    _, client = served_decoder
    tokenizer = load_tokenizer(tiny_decoder["model"])
    hh = client.post("/get_reward", json={"query": [PROMPT + " It is 12."]}).json()
    pair = client.post("/score", json={"pairs": [{"prompt": PROMPT, "response": "It is 12."}]}).json()
    assert hh["rewards"] == pytest.approx(pair["scores"], abs=1e-6) and hh["extra_logs"]["scored_as"] == [
        "hh-rlhf"
    ]
    # a templated query that is not its prompt's continuation: scored as the text it is
    body = openrlhf_body(tokenizer, "It is 12.") | {"prompts": ["another prompt altogether"]}
    assert client.post("/get_reward", json=body).json()["extra_logs"]["scored_as"] == ["templated"]
    # the template's markup inside text that does not open with it: either reading would guess
    marked = client.post("/get_reward", json={"query": [PROMPT + " It is <|im_end|> 12."]})
    assert marked.status_code == 422 and "does not open as the template does" in marked.json()["detail"]
    # an empty text has no token to read a score from: a 422, not a 500
    assert client.post("/classify", json={"input": ""}).status_code == 422


@pytest.mark.parametrize("name", TOLERANCE)
def test_an_encoder_scores_classify_texts_with_its_own_special_tokens(tiny_model, name, request):
    cls = runtime_class(name)
    options = {"binary": str(request.getfixturevalue("binary"))} if name == "native" else {}
    onnx = tiny_model["onnx"] if cls.needs_onnx else None
    runtime = cls(tiny_model["model"], onnx, "cpu", 1, 512, options)
    runtime.load()
    try:
        client = TestClient(create_app(runtime))
        texts = ["Human: hi there. Assistant: hello!", "a second text"]
        answer = client.post("/classify", json={"input": texts, "activation": False}).json()
        got = np.array([entry["probs"][0] for entry in answer["data"]])
        expected = exact_scores(tiny_model["model"], texts, special_tokens=True)
        assert np.abs(got - expected).max() <= TOLERANCE[name]
        # an encoder's rows stay pairs on /get_reward; a policy's chat markup is not hh-rlhf text
        hh = client.post("/get_reward", json={"query": [PROMPT + " It is 12."]})
        assert hh.status_code == 200 and hh.json()["extra_logs"]["scored_as"] == ["hh-rlhf"]
        chatml = client.post("/get_reward", json={"query": ["<|im_start|>user\nhi<|im_end|>\n"]})
        assert chatml.status_code == 422 and "assistant" in chatml.json()["detail"].lower()
        # pairs and texts batched together score as each alone
        mixed = runtime.score([texts[0], (PROMPT, "It is 12.")])
        alone = [runtime.score([texts[0]])[0], runtime.score([(PROMPT, "It is 12.")])[0]]
        assert np.allclose(mixed, alone, atol=TOLERANCE[name])
    finally:
        runtime.close()
