import subprocess
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


@pytest.fixture(scope="session")
def binary(tmp_path_factory):
    """The native engine, configured, built and unit-tested (ctest) in a temporary folder."""
    build = tmp_path_factory.mktemp("native-build")
    for cmd in (
        [
            "cmake",
            "-S",
            str(ROOT / "native"),
            "-B",
            str(build),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPYTHON={sys.executable}",
        ],
        ["cmake", "--build", str(build), "-j", "2"],
        ["ctest", "--test-dir", str(build), "--output-on-failure"],
    ):
        run = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return build / "rmscore"
