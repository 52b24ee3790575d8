import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
# As in the pipeline's jobs (config: onnxruntime_telemetry): no telemetry thread in the processes
# the tests start, nor a /tmp/mat-debug-<pid>.log each.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
sys.path.insert(0, str(ROOT / "workflow"))
from rmbench.plan import inputs

# Property tests draw the same examples every run (seeded from each test), so a failure found in
# CI reproduces on a developer's machine.
settings.register_profile("rmbench", derandomize=True, print_blob=True)
settings.load_profile("rmbench")

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

# Text a real user may send that the generated data never holds.
ADVERSARIAL = [
    ("Héllo Wörld, ça va? Ñandú São Paulo naïve façade", "Résumé: Crème brûlée — déjà vu!"),
    ("日本語のテキスト 中文字符 한국어", "Mixed 中文 and English words"),
    ("emoji 😀🎉👍🏽 and flags 🇫🇷", "❤️ ✨ 🥰 math ∑∫√ ≤ ≥ ≠"),
    ("control\x01\x02chars\x7f and\u200bzero\u200cwidth\u200djoiners\ufeff", "tabs\tand\nnewlines\r\nhere"),
    ("", "an empty prompt"),
    ("an empty response", ""),
    ("", ""),
    ("word " * 5 + "x" * 5000, "a 5,000-character word above"),
    (" ".join(["long prompt"] * 600), " ".join(["long response"] * 600)),
    (" ".join(["short"] * 3), " ".join(["very long response"] * 900)),
    (" ".join(["very long prompt"] * 900), "short"),
    ("  leading   and   repeated   spaces  ", "   "),
    ("Numbers 1,234.56 $99 3:30pm 2nd 1e-7", "URLs https://example.org/a?b=c&d=e#f and e-mail a.b@c.de"),
    ("quotes “curly” ‘single’ «guillemets» and dashes – —", "ellipsis… and ½ ² ® ™ ©"),
    ("Ǆ ǅ ǆ İstanbul ß ﬁ ligatures ＦＵＬＬＷＩＤＴＨ", "Ελληνικά Русский עברית العربية हिन्दी"),
    # Around the spaces the native SentencePiece splits words on: other spaces, marks that
    # combine with what precedes them, a literal metaspace, repeated words (its cache).
    (
        "no\u00a0break \u3000 ideographic \u2003em  \t tab \u0301acute \u0308 e\u0301",
        "▁literal ▁▁ metaspace▁ x ▁",
    ),
    ("the the the The THE the. the, (the) the", "  the  the\u00a0the \u200bthe the\u200b the"),
]


COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", ".snakemake", "results", "__pycache__", ".pytest_cache", "tables", "figures", "build"
)
# The native engine's build as the pipeline makes it (rule native_build, ctest included).
NATIVE_OUTPUTS = (inputs.NATIVE_BINARY, inputs.NATIVE_OPERATORS)
# What a slice of the pipeline reuses from the smoke run: it reruns what it measures, not its inputs.
REUSED = [
    f"results/{f}" for f in ("data", "tokenizers", "models", "onnx", "reference", "correctness", "native")
]
# The smoke run's last step, and what a copy of the whole run holds.
LAST_STEP = ("all", "paper")
WHOLE_RUN = ["results", "paper/tables", "paper/figures"]


def profile_config(profile: str = "smoke") -> dict:
    """The config a profile runs, checked and with defaults filled as the pipeline does."""
    from rmbench.plan.profiles import profile_config as resolved

    return resolved(ROOT, profile)


def profile_cells(study: str, profile: str = "smoke", **where) -> list[dict]:
    """The profile's cell launches of one study (up to each cap) whose keys have the given values,
    e.g. profile_cells("latency", device="cpu"); `set` matches the cell's sample set."""
    from rmbench.plan.cells import cell_table, parse_params

    def matches(cell):
        fields = cell | {"set": parse_params(cell["params"])["set"]}
        return cell["study"] == study and all(fields[k] == v for k, v in where.items())

    return [cell for cell in cell_table(profile_config(profile)) if matches(cell)]


def needs(present: bool, reason: str) -> None:
    """Skips the calling test (or module) when a tool it needs is missing. Under CI (CI=true) that
    fails instead: CI installs every tool a promise needs, so a green run proves them all."""
    if present:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI lacks what this test needs: {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


# A process group of its own, in this session (Python 3.10 has no process_group argument). Not a
# session: where the kernel shares CPU between sessions first (autogroup), a smoke run in a session
# of its own got at most half the machine while any unit test ran; in the tests' session its jobs
# get their share process by process.
OWN_PROCESS_GROUP = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}


def snakemake(
    workdir,
    *args,
    cores: int | None = 2,
    profile: str = "smoke",
    timeout: float = 3600,
    entry: tuple[str, ...] = ("-m", "snakemake"),
):
    """Snakemake in `workdir` with a profile (the smoke one by default), as a user runs it. In a
    process group of its own, so that a co-location test pinning the tests' process (and its
    group) to one core leaves it alone (rmbench.studies.colocation.pin_tree)."""
    cmd = [sys.executable, *entry, "--workflow-profile", f"workflow/profiles/{profile}"]
    cmd += ["--cores", str(cores), *args] if cores else list(args)
    return subprocess.run(
        cmd,
        cwd=workdir,
        env=user_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        **OWN_PROCESS_GROUP,
    )


def user_env() -> dict:
    """As a user's shell has it: without the telemetry switch conftest sets for the tests'
    processes, so that the launch records show what the workflow itself set."""
    return {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}


def pipeline_copy(workdir: Path, smoke: Path | None = None, reused=REUSED) -> Path:
    """A fresh copy of the repository in `workdir`, with the smoke run's `reused` folders hard-linked
    in (their time stamps kept, so Snakemake finds them up to date). Logs are copied instead: a
    job that runs again writes its log in place, which would change the smoke run's too."""

    def link_or_copy(source: str, target: str):
        logs = smoke / "results" / "logs"
        return shutil.copy2(source, target) if Path(source).is_relative_to(logs) else os.link(source, target)

    shutil.copytree(ROOT, workdir, ignore=COPY_IGNORE)
    for folder in reused if smoke else []:
        if (smoke / folder).is_dir():
            shutil.copytree(smoke / folder, workdir / folder, copy_function=link_or_copy, dirs_exist_ok=True)
    return workdir


@contextlib.contextmanager
def crashing_engine(workdir: Path):
    """The native engine of a pipeline copy swapped, inside the block, for one that exits 70 and
    says 'engine crashed on purpose'. It keeps the engine's time stamp, so Snakemake sees no new
    input, and leaves the smoke run's engine (a hard link of it) whole."""
    binary = workdir / inputs.NATIVE_BINARY
    real = binary.with_name("rmscore.real")
    shutil.copy2(binary, real)
    binary.unlink()
    binary.write_text("#!/bin/sh\necho 'engine crashed on purpose' >&2\nexit 70\n")
    shutil.copystat(real, binary)
    try:
        yield
    finally:
        os.replace(real, binary)


class Follower:
    """A test module's start_after_smoke(copies), run in a thread once the smoke run has made what
    the module's SMOKE_NEEDS names: a slice that mostly waits (on a cluster) overlaps the rest of
    the smoke run and the unit tests; checks that change the run's files (SMOKE_NEEDS =
    LAST_STEP) overlap those that read them. copies: {name: a pipeline copy reusing the smoke
    run's inputs, or the whole run after its last step}, one per name in the module's
    SMOKE_COPIES. result() waits for what it returned and raises what it raised."""

    def __init__(self, start, copies: dict[str, Path]):
        self.value, self.error = None, None
        self.thread = threading.Thread(target=self._run, args=(start, copies), daemon=True)
        self.thread.start()

    def _run(self, start, copies):
        try:
            self.value = start(copies)
        except Exception as error:  # noqa: BLE001 (raised again in the test that asks for the result)
            self.error = error

    def result(self):
        self.thread.join()
        if self.error:
            raise self.error
        return self.value


def scenario_outcomes(scenarios: dict, workdir_of) -> dict:
    """Each scenario (name: a function of a pipeline copy) in order, on workdir_of(name). An error is
    kept as the scenario's outcome, raised again by outcome() in the scenario's own test."""
    outcomes = {}
    for name, scenario in scenarios.items():
        try:
            outcomes[name] = scenario(workdir_of(name))
        except Exception as error:  # noqa: BLE001 (raised again in the scenario's test)
            outcomes[name] = error
    return outcomes


def outcome(outcomes: dict, name: str) -> dict:
    if isinstance(outcomes[name], Exception):
        raise outcomes[name]
    return outcomes[name]


class SmokeRun:
    """The smoke profile's `all` on a fresh copy of the repository, started in the background when
    the session starts, so the unit tests run beside it. In three steps: the native engine (the
    tests' one build); what the followers reuse (their modules' SMOKE_NEEDS, files `all` makes
    anyway), after which the followers start on copies of their own; then `all` and `paper`, which
    find both up to date, after which the followers that need the whole run start. followers:
    {module name: the module (start_after_smoke, SMOKE_NEEDS, SMOKE_COPIES) and a folder of its
    own}. `finished`: a run already made (nothing runs)."""

    def __init__(self, workdir: Path, followers: dict, finished: bool = False):
        self.workdir, self.followers = workdir, followers
        self.built, self.finished = threading.Event(), threading.Event()
        self.started: dict[str, Follower] = {}
        self.failure = ""
        self.printed = ""  # what its last step printed
        self.process: subprocess.Popen | None = None
        threading.Thread(target=self._run, args=(finished,), daemon=True).start()

    def _run(self, finished: bool):
        try:
            self._steps(finished)
        except Exception as error:  # noqa: BLE001 (the tests waiting on the run fail with it)
            self.failure = self.failure or f"the smoke run's thread failed: {error!r}"
        finally:
            self.built.set()
            self.finished.set()

    def _steps(self, finished: bool):
        if not finished:
            self._snakemake(*NATIVE_OUTPUTS)
        self.built.set()
        last = {n: f for n, f in self.followers.items() if set(f[0].SMOKE_NEEDS) <= set(LAST_STEP)}
        early = {n: f for n, f in self.followers.items() if n not in last}
        needs = sorted({path for module, _ in early.values() for path in module.SMOKE_NEEDS})
        if needs and not (self.failure or finished):
            self._snakemake(*needs)
        # The copies are made before the next step starts: none links a file half written.
        self._follow(early, REUSED)
        if not (self.failure or finished):
            # `paper` too, as a user runs it after `all`: beside the unit tests, not after them.
            self.printed = self._snakemake(*LAST_STEP)
        self._follow(last, WHOLE_RUN)

    def _follow(self, followers: dict, reused: list[str]):
        if self.failure:
            return
        for name, (module, folder) in followers.items():
            copies = {
                c: pipeline_copy(folder / c / "rmbench", self.workdir, reused) for c in module.SMOKE_COPIES
            }
            self.started[name] = Follower(module.start_after_smoke, copies)

    def _snakemake(self, *targets):
        cmd = [sys.executable, "-m", "snakemake", "--workflow-profile", "workflow/profiles/smoke"]
        self.process = subprocess.Popen(
            [*cmd, "--cores", "2", *targets],
            cwd=self.workdir,
            env=user_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            **OWN_PROCESS_GROUP,  # stopped as a group with its jobs at the session's end
        )
        output = self.process.communicate()[0]
        if self.process.returncode != 0:
            self.failure = f"snakemake {' '.join(targets)} failed:\n{output[-6000:]}"
        return output

    def wait(self, event: threading.Event) -> Path:
        event.wait()
        assert not self.failure, self.failure
        return self.workdir

    def stop(self):
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)


def uses_smoke(item) -> bool:
    return "smoke_run" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(items):
    """The tests of the smoke run's results last: the unit tests run while it runs. Before them,
    the modules that need the native engine, which the smoke run builds first (about a minute):
    the others run meanwhile instead of waiting for it. Modules stay whole (module fixtures are
    made once)."""
    needs_engine = {item.module for item in items if "binary" in getattr(item, "fixturenames", ())}
    items.sort(key=lambda item: (uses_smoke(item), item.module in needs_engine))


@pytest.fixture(scope="session")
def smoke_pipeline(request, tmp_path_factory):
    """The background smoke run, started by the session's first test where any collected test
    needs its results or the native engine."""
    modules = {item.module for item in request.session.items if hasattr(item.module, "start_after_smoke")}
    followers = {m.__name__: (m, tmp_path_factory.mktemp(m.__name__)) for m in modules}
    # A developer iterating on these checks may point them at a finished smoke run of the current
    # tree instead of making a new one (CI never sets it).
    if os.environ.get("RMBENCH_SMOKE_DIR"):
        run = SmokeRun(Path(os.environ["RMBENCH_SMOKE_DIR"]), followers, finished=True)
    else:
        run = SmokeRun(pipeline_copy(tmp_path_factory.mktemp("smoke") / "rmbench"), followers)
    yield run
    run.stop()


@pytest.fixture(scope="session", autouse=True)
def start_smoke_run(request):
    needed = {"smoke_run", "binary"}
    if any(needed & set(getattr(item, "fixturenames", ())) for item in request.session.items):
        request.getfixturevalue("smoke_pipeline")


@pytest.fixture(scope="session")
def smoke_run(smoke_pipeline) -> Path:
    """The smoke run's finished repository copy (test_pipeline checks it; slices reuse its results)."""
    return smoke_pipeline.wait(smoke_pipeline.finished)


@pytest.fixture(scope="session")
def smoke_printed(smoke_pipeline, smoke_run) -> str:
    """What the smoke run's `all paper` printed (for a run made before the session, what `paper`
    prints on it)."""
    if smoke_pipeline.printed:
        return smoke_pipeline.printed
    run = snakemake(smoke_run, "paper")
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout + run.stderr


@pytest.fixture(scope="module")
def followed(request, smoke_pipeline, smoke_run):
    """What the requesting module's start_after_smoke returned, started as the smoke run finished."""
    return smoke_pipeline.started[request.module.__name__].result()


@functools.cache
def _default_split() -> tuple[dict, ...]:
    import yaml
    from rmbench.models.synthetic import generate_split

    data = yaml.safe_load((ROOT / "config.yaml").read_text())["data"]
    return tuple(generate_split(data["synthetic_seed"], data["synthetic_rows"]))


def default_split() -> list[dict]:
    """The default config's synthetic split, as the data rule draws it. Drawn once per session
    (about 10 s on the 2-core host): several tests check every row of its sample sets."""
    return list(_default_split())


def sample_set_pairs() -> list[tuple[str, str]]:
    """(prompt, response) of every row of the default config's sample sets, as the sample_set
    rule draws them."""
    import yaml
    from rmbench.models.data import sample_rows

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    pairs = []
    for name, s in config["sets"].items():
        pairs += [
            (r["prompt"], r["response"]) for r in sample_rows(default_split(), s["size"], s["seed"], name)
        ]
    return pairs


def tie_pairs(count: int = 300, seed: int = 37) -> list[tuple[str, str]]:
    """Seeded text where unigram segmentations tie: digit groups after separators ("15,000"
    as "0 00" or "00 0"), repeated letters, digit and punctuation runs, mixed scripts."""
    import random

    rng = random.Random(seed)
    letters = ["sss", "Mississippi", "aaaa", "ssss", "hmmmm", "noooo", "zzzz", "Tennessee", "bookkeeper"]
    runs = ["!!!", "...", "----", "???", "0000", "1111", "000000", "))))", "''''", ",,,"]
    scripts = ["東京2020年", "Привет000", "αβγ,000", "١٢٣,٠٠٠", "€1.000,00", "naïve000", "日本語sss"]

    def number() -> str:
        n = rng.choice([15_000, 1_000_000, 2_500_000, 10**9, 7_777_777, rng.randint(1_000, 10**8)])
        european = f"{n:,}".replace(",", ".") + f",{rng.randint(0, 99):02d}"
        return rng.choice([f"${n:,}", f"{n:,}", f"{n:,.2f}", european, f"{n:_}", f"{n}"])

    def text() -> str:
        kinds = (number, lambda: rng.choice(letters), lambda: rng.choice(runs), lambda: rng.choice(scripts))
        words = [rng.choice(kinds)() for _ in range(rng.randint(3, 12))]
        glue = "".join(rng.choice("0123456789,.-/:sS") for _ in range(rng.randint(0, 20)))
        return " ".join(words + [glue])

    return [(text(), text()) for _ in range(count)]


def tiny_reward_model(root: Path, cfg: dict, row_prefix: str) -> dict:
    """A tiny synthetic reward model folder built as the pipeline builds one, with its ONNX export
    and 10 generated rows."""
    from rmbench.export.onnx import export_onnx
    from rmbench.models.build import build_model, build_tokenizer
    from rmbench.models.data import sample_rows
    from rmbench.models.synthetic import generate_split

    build_tokenizer(cfg, root / "tokenizer")
    build_model(cfg, root / "tokenizer", root / "model")
    export_onnx(root / "model", root / "onnx" / "model.onnx", opset=17)
    rows = sample_rows(generate_split(11, 200), 10, 5, row_prefix)
    return {"cfg": cfg, "model": root / "model", "onnx": root / "onnx" / "model.onnx", "rows": rows}


def loaded_runtime(runtime):
    """A fixture's body (`yield from`): the runtime loaded for the tests, closed after them."""
    runtime.load()
    yield runtime
    runtime.close()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A tiny real ELECTRA-architecture reward model folder with its ONNX export and rows."""
    return tiny_reward_model(tmp_path_factory.mktemp("tiny"), TINY | {"name": "tiny"}, "t")


TINY_QWEN3 = TINY | {"architecture": "qwen3-0.6b", "layers": 2, "num_attention_heads": 4, "seed": 5}


@pytest.fixture(scope="session")
def tiny_decoder(tmp_path_factory):
    """A tiny real Qwen3 reward model folder (the real Qwen tokenizer and template, last-token head)
    with its ONNX export and rows."""
    return tiny_reward_model(tmp_path_factory.mktemp("tiny-qwen3"), TINY_QWEN3 | {"name": "tiny_qwen3"}, "q")


@pytest.fixture(scope="session")
def binary(smoke_pipeline) -> Path:
    """The native engine as the smoke run's first step built it (configured, built, ctest)."""
    return smoke_pipeline.wait(smoke_pipeline.built) / NATIVE_OUTPUTS[0]


@pytest.fixture(scope="session")
def tokenizers(tmp_path_factory, tiny_model):
    """The two tokenizer kinds as the pipeline builds them: WordPiece (ELECTRA) and a trained
    SentencePiece (DeBERTa-v3)."""
    from rmbench.models.build import build_tokenizer, train_sentencepiece
    from rmbench.models.synthetic import generate_split

    root = tmp_path_factory.mktemp("tokenizers")
    lines = [t for d in generate_split(17, 600) for t in d["chosen"].split("\n\n") if t]
    train_sentencepiece(lines, root / "spm.model", 4000, 17)
    build_tokenizer(
        {"name": "d", "architecture": "deberta-v3-large", "source": "synthetic"},
        root / "deberta",
        root / "spm.model",
    )
    return {"electra": tiny_model["model"], "deberta": root / "deberta"}


@pytest.fixture(scope="session")
def config_deberta_tokenizers(tmp_path_factory):
    """DeBERTa's tokenizer as the default config and the smoke profile train it (the schema's
    defaults filled in), with the functions the pipeline's tokenizer rules call."""
    import yaml
    from rmbench.models.build import build_tokenizer, train_sentencepiece
    from rmbench.models.english import tokenizer_corpus
    from snakemake.utils import validate

    root = tmp_path_factory.mktemp("config-tokenizers")
    smoke = yaml.safe_load((ROOT / "workflow/profiles/smoke/experiment.yaml").read_text())
    folders = {}
    for name, overlay in (("default", {}), ("smoke", smoke.get("tokenizers", {}))):
        config = yaml.safe_load((ROOT / "config.yaml").read_text())
        config["tokenizers"] = config.get("tokenizers", {}) | overlay
        validate(config, str(ROOT / "workflow/schemas/config.schema.yaml"))
        cfg = config["tokenizers"]
        lines = tokenizer_corpus(cfg)
        train_sentencepiece(lines, root / f"{name}.model", cfg["spm_vocab_size"], cfg["spm_seed"])
        build_tokenizer(config["models"]["deberta"], root / name, root / f"{name}.model")
        folders[name] = root / name
    return folders
