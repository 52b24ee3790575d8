"""The config a profile runs, resolved as the pipeline resolves it, and a hash that names it.

A recorded run keeps the hash of its config (rmbench.report.readme): when config.yaml, a profile's
overlay or the schema's defaults change what `all` runs, the hash changes, and the docs' figures
from that run are flagged as out of date.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml

from rmbench.plan.cells import drop_removed_runtimes


def profile_config(root: Path, profile: str = "default") -> dict:
    """config.yaml under `root` with each overlay the profile names merged on top, checked and with
    defaults filled as workflow/rules/common.smk does."""
    from snakemake.utils import update_config, validate

    root = Path(root)
    config = yaml.safe_load((root / "config.yaml").read_text())
    options = yaml.safe_load((root / f"workflow/profiles/{profile}/config.yaml").read_text()) or {}
    for overlay in options.get("configfiles", []):
        update_config(config, yaml.safe_load((root / overlay).read_text()))
    drop_removed_runtimes(config)
    validate(config, str(root / "workflow/schemas/config.schema.yaml"))
    return config


def config_hash(config: dict) -> str:
    """16 hex digits of the SHA-256 of the config's canonical JSON: equal configs, equal hashes,
    whatever the order or comments of the YAML they came from."""
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
