"""The config schema: defaults filled, bad keys and values stopped with a message naming them."""

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import profile_config
from rmbench.errors import RmbenchError
from rmbench.plan.cells import check_references
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")


@pytest.fixture
def config():
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def test_default_config_is_valid_and_defaults_are_filled(config):
    validate(config, SCHEMA)
    assert config["launch"]["warmup_rows"] == 3
    assert config["parity"]["batch_size"] == 4
    assert config["models"]["deberta"]["seed"] == 1


@pytest.mark.parametrize("profile", ["smoke", "extended", "full-depth", "hub", "language"])
def test_profile_overlays_are_valid(profile):
    """Each overlay the profile names (smoke: the extended tier's, then its own), in order."""
    options = yaml.safe_load((ROOT / f"workflow/profiles/{profile}/config.yaml").read_text())
    assert options["configfiles"][-1] == f"workflow/profiles/{profile}/experiment.yaml"
    config = profile_config(profile)
    assert config["tier"] == ("paper" if profile in ("full-depth", "hub") else "extended")


def test_an_overlay_removes_a_runtime_its_base_lists_by_setting_it_to_null():
    from rmbench.plan.cells import drop_removed_runtimes

    smoke = profile_config("smoke")
    assert "torch_compile" not in smoke["studies"]["decomposition"]["runtimes"]
    assert "torch_compile" in profile_config("extended")["studies"]["decomposition"]["runtimes"]
    config = {"studies": {"s": {"runtimes": {"a": {}, "b": None}}}}
    assert drop_removed_runtimes(config) == {"studies": {"s": {"runtimes": {"a": {}}}}}


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda c: c.update(threadz=2), "threadz"),
        (lambda c: c["data"].update(source="s3"), "s3"),
        (lambda c: c["models"]["deberta"].update(architecture="gpt-9"), "gpt-9"),
        (lambda c: c["sets"]["main60"].update(size=0), "0"),
        (lambda c: c["studies"]["tokenizer"]["runtimes"].update(sentencepiece={}), "sentencepiece"),
    ],
)
def test_bad_key_or_value_is_named(config, edit, named):
    bad = copy.deepcopy(config)
    edit(bad)
    with pytest.raises(WorkflowError, match=named):
        validate(bad, SCHEMA)


def test_study_naming_an_undefined_set(config):
    config["studies"]["latency"]["sets"] = ["main60", "main99"]
    with pytest.raises(RmbenchError, match="main99"):
        check_references(config)


def test_dry_run_with_a_bad_config_stops_with_the_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("launch: {warmup_rowz: 3}\n")
    run = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", str(bad)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode != 0
    assert "warmup_rowz" in run.stdout + run.stderr


def test_the_schema_offers_the_onnx_files_that_exist():
    """The schema's enums repeat rmbench.export.onnx_files' names (YAML cannot import them)."""
    from rmbench.export.onnx_files import MATMUL_GROUPS, ONNX_OPTIMIZERS

    schema = yaml.safe_load(Path(SCHEMA).read_text())
    assert tuple(schema["definitions"]["matmuls"]["enum"]) == MATMUL_GROUPS

    def optimizer_enums(node) -> list[tuple]:
        if isinstance(node, list):
            return [e for item in node for e in optimizer_enums(item)]
        if not isinstance(node, dict):
            return []
        found = [e for value in node.values() for e in optimizer_enums(value)]
        for key in ("optimizer", "optimizers"):
            spec = node.get(key)
            if isinstance(spec, dict):
                found.append(tuple(spec.get("enum") or spec.get("items", {}).get("enum") or ()))
        return found

    enums = optimizer_enums(schema)
    assert len(enums) == 3 and all(e == ONNX_OPTIMIZERS for e in enums), enums


def test_the_configuration_page_names_every_key_of_the_schema():
    """docs/configuration.md documents the schema: a key added without a line there fails here."""
    schema = yaml.safe_load(Path(SCHEMA).read_text())
    page = (ROOT / "docs/configuration.md").read_text()
    # the first column of a table row, or a heading
    rows = [line.split(" | ")[0] for line in page.splitlines() if line.startswith(("| `", "## "))]

    def named(key: str) -> bool:  # in the first column of a table row
        return any(f"`{key}`" in row for row in rows)

    study = schema["definitions"]["study"]["properties"]
    keys = list(schema["properties"])
    keys += [
        f"{key}.{sub}"
        for key, spec in schema["properties"].items()
        if key not in ("launch", "studies")
        for sub in spec.get("properties", {})
    ]
    keys += [f"studies.{name}" for name in schema["properties"]["studies"]["properties"]]
    keys += [f"launch.{sub}" for sub in ("warmup_rows", "timeout_s", "order_seed")]
    keys += [
        f"launch.sequential.{sub}"
        for sub in schema["properties"]["launch"]["properties"]["sequential"]["properties"]
    ]
    keys += [sub for sub in study if sub != "runtimes"]
    keys += [f"runtimes.<name>.{sub}" for sub in study["runtimes"]["additionalProperties"]["properties"]]
    keys += [
        f"models.<name>.{sub}" for sub in schema["properties"]["models"]["additionalProperties"]["properties"]
    ]
    # a row may name several keys of one kind: `models.<name>.hidden_size`, `num_attention_heads`
    missing = [k for k in keys if not named(k) and not named(k.rpartition(".")[2])]
    missing = [k for k in missing if not k.startswith("studies.") or f"`{k[8:]}`" not in page]
    assert not missing, f"docs/configuration.md does not name: {', '.join(missing)}"


@pytest.mark.parametrize(
    "study, runtime, named",
    [
        ("latency", "tensorrt", "tensorrt, which is not a runtime of this study"),
        ("latency", "batching_server", "batching_server, which is not a runtime of this study"),
        ("zerocopy", "ort_python", "(its runtimes: native)"),
    ],
)
def test_a_study_naming_a_runtime_that_does_not_join_it_is_refused(config, study, runtime, named):
    from rmbench.runtimes import check_runtimes

    config["studies"].setdefault(study, {"runtimes": {}})["runtimes"][runtime] = {}
    with pytest.raises(RmbenchError, match=re.escape(named)):
        check_runtimes(config)


TOY_RUNTIME = '''
"""A toy runtime: the sum of the pair's lengths, for the registry test."""

from .base import Runtime


class ToyRuntime(Runtime):
    name = "toy"
    studies = ("latency",)
    uses_torch = False

    @classmethod
    def unavailable_reason(cls, device, options=None):
        return None if device == "cpu" else "the toy runs on the CPU only"

    def load(self):
        pass

    def score(self, pairs):
        return [float(len(p) + len(r)) for p, r in pairs]
'''


def test_adding_a_runtime_is_one_module_and_one_registry_line(tmp_path):
    """A toy runtime in a copy of the repository: its module, one line in RUNTIMES and a config
    that gives it launches; the DAG takes it with no other change (no ONNX file: it loads none)."""
    import shutil

    copy = tmp_path / "rmbench"
    ignore = shutil.ignore_patterns(".git", ".venv", ".snakemake", "results", "__pycache__", "paper")
    shutil.copytree(ROOT, copy, ignore=ignore)
    runtimes = copy / "workflow/rmbench/runtimes"
    (runtimes / "toy.py").write_text(TOY_RUNTIME)
    registry = (runtimes / "__init__.py").read_text()
    line = '    "native": "rmbench.runtimes.native:NativeRuntime",\n'
    assert line in registry
    (runtimes / "__init__.py").write_text(
        registry.replace(line, line + '    "toy": "rmbench.runtimes.toy:ToyRuntime",\n')
    )
    (copy / "toy.yaml").write_text("studies:\n  latency:\n    runtimes:\n      toy: {launches: {cpu: 2}}\n")
    cell = "results/cells/latency/electra/cpu/toy/set~main60/launch~2.json"
    run = subprocess.run(
        [sys.executable, "-m", "snakemake", "--configfile", "toy.yaml", "--dry-run", "--cores", "1", cell],
        cwd=copy,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-3000:]
    assert f"output: {cell}" in out
    assert "results/onnx/electra/model.onnx" not in out  # it declares no ONNX file
