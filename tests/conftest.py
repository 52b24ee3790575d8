import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

# What a fresh copy of the repository leaves out (what a run or a build writes).
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", ".snakemake", "results", "__pycache__", ".pytest_cache", "tables", "figures", "build"
)


def snakemake_command(*args, cores: int | None = 2) -> list[str]:
    cmd = [sys.executable, "-m", "snakemake", "--workflow-profile", "workflow/profiles/smoke"]
    return cmd + (["--cores", str(cores), *args] if cores else list(args))


class SmokeRun:
    """The smoke profile's `all` on a fresh copy of the repository, in the background.

    It is most of the suite's time on two cores, and the unit tests leave a core idle: so it starts
    as soon as collection selects a test of test_pipeline.py, runs while the unit tests do, and
    those tests wait for it (the `smoke_run` fixture)."""

    def __init__(self):
        self.workdir, self.process, self.log = None, None, None

    def start(self) -> None:
        if self.process:
            return
        self.workdir = Path(tempfile.mkdtemp(prefix="rmbench-smoke-")) / "rmbench"
        shutil.copytree(ROOT, self.workdir, ignore=COPY_IGNORE)
        self.log = self.workdir.parent / "smoke.log"
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                snakemake_command("all"),
                cwd=self.workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() ends every job with it
            )

    def wait(self, timeout_s: float = 3600) -> Path:
        self.start()
        code = self.process.wait(timeout=timeout_s)
        assert code == 0, f"smoke pipeline failed (exit {code}; {self.log}):\n" + self.log.read_text()[-6000:]
        return self.workdir

    def stop(self, remove: bool) -> None:
        """Ends a run the session no longer waits for; removes its copy unless a test failed."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        if self.workdir and remove:
            shutil.rmtree(self.workdir.parent, ignore_errors=True)


SMOKE = SmokeRun()


def pytest_collection_finish(session):
    if session.config.option.collectonly:
        return
    if any(Path(str(item.fspath)).name == "test_pipeline.py" for item in session.items):
        SMOKE.start()


def pytest_sessionfinish(session, exitstatus):
    SMOKE.stop(remove=exitstatus == 0)


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
