"""What every launch reports of its per-row times, whatever it timed."""

from __future__ import annotations

import numpy as np


def percentile_summary(values: list[float], unit: str = "ms") -> dict:
    """A launch's representative values: p50, p95, mean, min and max of its per-row values."""
    x = np.asarray(values, dtype=float)
    return {
        f"p50_{unit}": float(np.percentile(x, 50)),
        f"p95_{unit}": float(np.percentile(x, 95)),
        f"mean_{unit}": float(x.mean()),
        f"min_{unit}": float(x.min()),
        f"max_{unit}": float(x.max()),
    }
