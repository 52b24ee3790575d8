import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

TINY = {
    "architecture": "electra-large",
    "source": "synthetic",
    "layers": 1,
    "hidden_size": 32,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "init_std": 0.1,
    "head_init_std": 0.2,
    "seed": 3,
    "local_path": None,
}


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A tiny real ELECTRA-architecture reward model folder with its ONNX export and rows."""
    from rmbench.data import sample_rows
    from rmbench.export import export_onnx
    from rmbench.models import build_model, build_tokenizer
    from rmbench.synthetic import generate_split

    root = tmp_path_factory.mktemp("tiny")
    cfg = TINY | {"name": "tiny"}
    build_tokenizer(cfg, root / "tokenizer")
    build_model(cfg, root / "tokenizer", root / "model")
    export_onnx(root / "model", root / "onnx" / "model.onnx", opset=17)
    rows = sample_rows(generate_split(11, 200), 10, 5, "t")
    return {"cfg": cfg, "model": root / "model", "onnx": root / "onnx" / "model.onnx", "rows": rows}
