"""Batching strategies shared by every Python runtime; native/src/batching.cpp implements the
same rules (tests/test_native.py proves both give the same batches).

  none:         every row alone, in arrival order
  naive:        consecutive rows in arrival order, batch_size at a time
  length_aware: rows sorted by token length (stable), batch_size at a time
  token_budget: rows sorted by token length (stable); each batch filled while
                rows x longest length <= token_budget and rows <= batch_size
  repeat:       every row as a batch of batch_size copies of itself: batching without any
                padding, so a batch's cost per row against the row alone is the batch effect
                itself (Python runtimes only; an experiment, not a serving strategy)
"""

from __future__ import annotations

STRATEGIES = ("none", "naive", "length_aware", "token_budget")  # the native engine's too
REPEAT = "repeat"
DEFAULT_TOKEN_BUDGET = 4096  # the native engine's default too


def make_batches(
    lengths: list[int], strategy: str, batch_size: int, token_budget: int = 0
) -> list[list[int]]:
    """Groups row indices into batches (scores are put back in arrival order by the caller)."""
    if strategy == REPEAT:
        return [[i] * batch_size for i in range(len(lengths))]
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown batching strategy '{strategy}' ({' | '.join([*STRATEGIES, REPEAT])})")
    order = list(range(len(lengths)))
    if strategy == "none":
        batch_size = 1
    if strategy in ("length_aware", "token_budget"):
        order.sort(key=lambda i: lengths[i])  # stable: ties keep arrival order
    batches: list[list[int]] = []
    for i in order:
        fits = bool(batches) and len(batches[-1]) < batch_size
        if fits and strategy == "token_budget":
            fits = (len(batches[-1]) + 1) * lengths[i] <= token_budget  # sorted: row i is the longest
        if not fits:
            batches.append([])
        batches[-1].append(i)
    return batches


def padding_waste(lengths: list[int], batches: list[list[int]]) -> float:
    """Padded tokens over real tokens when each batch is padded to its longest row."""
    real = sum(lengths[i] for b in batches for i in b)
    padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    return (padded - real) / real if real else 0.0


def batch_plan(options: dict) -> tuple[str, int, int]:
    """(strategy, batch size, token budget) of a batching cell, from its parameters
    (batching~naive+batch~8, and token_budget~N for token_budget)."""
    budget = int(options.get("token_budget", DEFAULT_TOKEN_BUDGET))
    return options.get("batching", "none"), int(options.get("batch", 1)), budget
