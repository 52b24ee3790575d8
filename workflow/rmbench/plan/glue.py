"""What every Snakemake script shares: its log file, clear errors, JSON output."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from pathlib import Path

from rmbench.errors import RmbenchError


@contextlib.contextmanager
def logged(log_path: str):
    """Sends this process's stdout and stderr (also those of C/C++ libraries) to the rule's log.

    A known error (RmbenchError) ends the job with its one-line message, in the log and on the
    terminal; any other exception keeps its traceback there too.
    """
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    terminal = os.fdopen(os.dup(2), "w")
    saved = os.dup(1), os.dup(2)  # given back on the way out: what follows prints on the terminal
    with open(log_path, "w") as log:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        except RmbenchError as e:
            message = f"rmbench error: {e}"
            print(message, file=sys.stderr, flush=True)
            print(message, file=terminal, flush=True)
            sys.exit(1)
        except BaseException as e:
            if not isinstance(e, SystemExit):
                traceback.print_exc()
                print(f"{type(e).__name__}: {e} (traceback in {log_path})", file=terminal, flush=True)
            raise
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, original in zip((1, 2), saved):
                os.dup2(original, fd)
                os.close(original)


def write_json(data, path: str | Path) -> None:
    """Writes JSON atomically, so an interrupted job never leaves a half-written result."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, allow_nan=True) + "\n")
    tmp.replace(path)


def read_json(path: str | Path):
    return json.loads(Path(path).read_text())


def read_table(path: str | Path):
    """A tidy CSV as written here: only empty cells are missing ('NA' stays text, e.g. a set name)."""
    import pandas as pd

    return pd.read_csv(path, keep_default_na=False, na_values=[""])
