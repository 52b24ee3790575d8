"""The config schema: defaults filled, bad keys and values stopped with a message naming them."""

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from rmbench.cells import check_references
from rmbench.errors import RmbenchError
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


@pytest.mark.parametrize("profile", ["smoke", "extended", "paper-arch", "paper"])
def test_profile_overlays_are_valid(config, profile):
    """Each overlay the profile names (smoke: the extended tier's, then its own), in order."""
    from snakemake.utils import update_config

    options = yaml.safe_load((ROOT / f"workflow/profiles/{profile}/config.yaml").read_text())
    assert options["configfiles"][-1] == f"workflow/profiles/{profile}/experiment.yaml"
    for overlay in options["configfiles"]:
        update_config(config, yaml.safe_load((ROOT / overlay).read_text()))
    validate(config, SCHEMA)
    assert config["tier"] == ("paper" if profile.startswith("paper") else "extended")


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda c: c.update(threadz=2), "threadz"),
        (lambda c: c["data"].update(source="s3"), "s3"),
        (lambda c: c["models"]["deberta"].update(layers=30), "30"),
        (lambda c: c["sets"]["main60"].update(size=0), "0"),
        (lambda c: c["studies"]["latency"]["runtimes"].update(tensorrt={}), "tensorrt"),
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


def test_the_schema_offers_every_matmul_group():
    from rmbench.precision import MATMUL_GROUPS

    schema = yaml.safe_load(Path(SCHEMA).read_text())
    assert tuple(schema["definitions"]["matmuls"]["enum"]) == MATMUL_GROUPS
