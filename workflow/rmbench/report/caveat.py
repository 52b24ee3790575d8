"""A sentence that every table caption, figure title and findings page of a run carries (config
`caveat`). The smoke profile's says that its numbers test the pipeline, not the runtimes.

Snakemake's process sets it for every job it starts (rules/common.smk), as it does ONNX Runtime's
telemetry switch, so that no rule needs it as a parameter.
"""

from __future__ import annotations

import os

VARIABLE = "RMBENCH_CAVEAT"


def set_caveat(text: str) -> None:
    os.environ[VARIABLE] = text


def caveat() -> str:
    """The run's caveat; '' where it has none."""
    return os.environ.get(VARIABLE, "").strip()


def with_caveat(text: str, separator: str = " ") -> str:
    """`text` after the caveat, where the run has one."""
    return f"{caveat()}{separator}{text}" if caveat() else text
