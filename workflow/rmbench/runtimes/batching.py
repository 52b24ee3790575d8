"""Batching strategies shared by every Python runtime; native/src/batching.cpp implements the
same rules (tests/test_native.py proves both give the same batches).

  none:         every row alone, in arrival order
  naive:        consecutive rows in arrival order, batch_size at a time
  length_aware: rows sorted by token length (stable), batch_size at a time
  token_budget: rows sorted by token length (stable); each batch filled while
                rows x longest length <= token_budget and rows <= batch_size
  waste_bound:  rows sorted by token length (stable); each batch filled while its padded
                tokens stay within (1 + max_waste) x its real tokens and rows <= batch_size: a
                batch only where the rows' lengths nearly agree (on a CPU a batch gains little,
                so the padding it may cost is bounded instead of the tokens)
  repeat:       every row as a batch of batch_size copies of itself: batching without any
                padding, so a batch's cost per row against the row alone is the batch effect
                itself (Python runtimes only; an experiment, not a serving strategy)

A cell's `padding` says how far each batch is padded: `longest` (the default; every strategy
above) to its longest row, `max_length` to the tokenizer's max length (512) as HF's
padding="max_length" does. With `longest`, a naive batch of b rows costs at most b rows of its
longest one, so its throughput cannot fall below 1/b of the rows alone unless a padded token
costs more in a batch than a real token alone; `max_length` tests whether the study's deeper
collapse (naive b=2 at 0.20x) came from padding every row to the maximum (Python runtimes only).

The service's batching across requests lives here too: MicroBatcher coalesces concurrent
requests into batches planned by these rules, kept where BatchCostModel predicts they pay.
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Future

STRATEGIES = ("none", "naive", "length_aware", "token_budget", "waste_bound")  # the native engine's too
REPEAT = "repeat"
DEFAULT_TOKEN_BUDGET = 4096  # the native engine's default too
DEFAULT_MAX_WASTE = 0.02  # the native engine's default too
SORTED = ("length_aware", "token_budget", "waste_bound")
PADDINGS = ("longest", "max_length")
PADDING_SIDES = ("declared", "left", "right")  # declared: the model family's


def make_batches(
    lengths: list[int],
    strategy: str,
    batch_size: int,
    token_budget: int = 0,
    max_waste: float = DEFAULT_MAX_WASTE,
) -> list[list[int]]:
    """Groups row indices into batches (scores are put back in arrival order by the caller)."""
    if strategy == REPEAT:
        return [[i] * batch_size for i in range(len(lengths))]
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown batching strategy '{strategy}' ({' | '.join([*STRATEGIES, REPEAT])})")
    order = list(range(len(lengths)))
    if strategy == "none":
        batch_size = 1
    if strategy in SORTED:
        order.sort(key=lambda i: lengths[i])  # stable: ties keep arrival order
    batches: list[list[int]] = []
    real = 0  # the last batch's real tokens
    for i in order:
        fits = bool(batches) and len(batches[-1]) < batch_size
        if fits and strategy == "token_budget":
            fits = (len(batches[-1]) + 1) * lengths[i] <= token_budget  # sorted: row i is the longest
        if fits and strategy == "waste_bound":  # the same expression as the native engine's
            fits = (len(batches[-1]) + 1) * lengths[i] <= (1.0 + max_waste) * (real + lengths[i])
        if not fits:
            real = 0
            batches.append([])
        batches[-1].append(i)
        real += lengths[i]
    return batches


def padding_waste(lengths: list[int], batches: list[list[int]], pad_to: int | None = None) -> float:
    """Padded tokens over real tokens when each batch is padded to its longest row (or every
    row to `pad_to` tokens)."""
    real = sum(lengths[i] for b in batches for i in b)
    padded = sum(len(b) * (pad_to or max(lengths[i] for i in b)) for b in batches)
    return (padded - real) / real if real else 0.0


def batch_plan(options: dict) -> tuple[str, int, int, float]:
    """(strategy, batch size, token budget, max waste) of a batching cell, from its parameters
    (batching~naive+batch~8, token_budget~N for token_budget, max_waste~F for waste_bound)."""
    budget = int(options.get("token_budget", DEFAULT_TOKEN_BUDGET))
    max_waste = float(options.get("max_waste", DEFAULT_MAX_WASTE))
    return options.get("batching", "none"), int(options.get("batch", 1)), budget, max_waste


class BatchCostModel:
    """Whether a planned batch pays on this device, learned from the batches a server runs.

    Per batch size it keeps a moving average of milliseconds per padded token. A planned batch
    of b rows is predicted to cost cost[b] x b x its longest length (a size not measured yet
    takes the nearest measured size's cost), its rows alone cost[1] x their total length; the
    cheaper plan runs. `calibrate` measures a few sizes before the first request; without it the
    first batch is tried and the first rows alone measured. Every `explore_every`-th decision
    takes the other plan, so the model follows the device and its drift: on a GPU batches pay
    and it keeps them; on a CPU where padding costs more than batching saves (the batching
    study) it scores the rows alone.
    """

    def __init__(self, alpha: float = 0.2, explore_every: int = 16):
        self.alpha, self.explore_every = alpha, explore_every
        self.ms_per_token: dict[int, float] = {}
        self.decisions = 0

    def observe(self, size: int, padded_tokens: int, ms: float) -> None:
        if padded_tokens <= 0:
            return
        value, known = ms / padded_tokens, self.ms_per_token.get(size)
        self.ms_per_token[size] = value if known is None else known + self.alpha * (value - known)

    def calibrate(self, score, pair, tokens: int, sizes: list[int], repeat: int = 2) -> None:
        """Times `pair` alone and in batches of each size (copies of it: no padding) with
        `score`, after one untimed call; `tokens` is the pair's token count."""
        score([pair])
        for size in [1, *sizes]:
            for _ in range(repeat):
                start = time.perf_counter()
                score([pair] * size)
                self.observe(size, size * tokens, (time.perf_counter() - start) * 1e3)

    def batch_cost(self, size: int) -> float | None:
        """Milliseconds per padded token at this batch size: measured, or the nearest measured."""
        measured = [s for s in self.ms_per_token if s > 1]
        if size in self.ms_per_token or not measured:
            return self.ms_per_token.get(size)
        return self.ms_per_token[min(measured, key=lambda s: (abs(s - size), s))]

    def keeps_batch(self, lengths: list[int]) -> bool:
        """True to run these rows as one batch, False to run each alone."""
        size = len(lengths)
        if size == 1:
            return True
        batched, alone = self.batch_cost(size), self.ms_per_token.get(1)
        if batched is None or alone is None:
            return batched is None  # measure the unmeasured plan first
        choice = batched * size * max(lengths) < alone * sum(lengths)
        self.decisions += 1
        return choice != (self.decisions % self.explore_every == 0)

    def plan(self, lengths: list[int], batches: list[list[int]]) -> list[list[int]]:
        """The planned batches, each one kept or split into its rows."""
        planned: list[list[int]] = []
        for batch in batches:
            keep = self.keeps_batch([lengths[i] for i in batch])
            planned += [batch] if keep else [[i] for i in batch]
        return planned


class QueueFull(Exception):
    pass


class MicroBatcher:
    """Scores concurrent requests together: waits up to `delay_s` after the first queued request
    for more (at most `max_batch` rows), plans batches over the rows it has by token length (kept
    only where `cost_model` predicts they pay, when given), and answers each request with its
    own scores."""

    def __init__(
        self,
        runtime,
        count_tokens,
        strategy: str,
        max_batch: int,
        token_budget: int,
        delay_s: float,
        queue_size: int,
        cost_model=None,
    ):
        self.runtime, self.count_tokens = runtime, count_tokens
        self.strategy, self.max_batch, self.token_budget, self.delay_s = (
            strategy,
            max_batch,
            token_budget,
            delay_s,
        )
        self.cost_model = cost_model
        self.queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self.stats = {"rounds": 0, "batches": 0, "rows": 0, "batched_rows": 0, "requests_expired": 0}

    def start(self) -> MicroBatcher:
        threading.Thread(target=self._serve, name="micro-batcher", daemon=True).start()
        return self

    def submit(self, pairs: list[tuple[str, str]]) -> Future:
        future: Future = Future()
        try:
            self.queue.put_nowait((pairs, future))
        except queue.Full:
            raise QueueFull(f"queue full ({self.queue.maxsize} requests waiting)") from None
        return future

    def _collect(self) -> list:
        items = [self.queue.get()]
        rows, deadline = len(items[0][0]), time.perf_counter() + self.delay_s
        while rows < self.max_batch:
            try:
                items.append(self.queue.get(timeout=max(0.0, deadline - time.perf_counter())))
            except queue.Empty:
                break
            rows += len(items[-1][0])
        # A request whose client gave up (timeout) is dropped, not scored.
        live = [item for item in items if item[1].set_running_or_notify_cancel()]
        self.stats["requests_expired"] += len(items) - len(live)
        return live

    def _serve(self) -> None:
        while True:
            items = self._collect()
            rows = [(k, pair) for k, (pairs, _) in enumerate(items) for pair in pairs]
            if not rows:
                continue
            try:
                lengths = self.count_tokens([pair for _, pair in rows])
                batches = make_batches(lengths, self.strategy, self.max_batch, self.token_budget)
                if self.cost_model is not None:
                    batches = self.cost_model.plan(lengths, batches)
                scores = [0.0] * len(rows)
                for batch in batches:
                    start = time.perf_counter()
                    for i, score in zip(batch, self.runtime.score([rows[i][1] for i in batch])):
                        scores[i] = float(score)
                    if self.cost_model is not None:
                        padded = len(batch) * max(lengths[i] for i in batch)
                        self.cost_model.observe(len(batch), padded, (time.perf_counter() - start) * 1e3)
            except Exception as e:  # noqa: BLE001  (each waiting request answers with it)
                for _, future in items:
                    future.set_exception(e)
                continue
            self.stats["rounds"] += 1
            self.stats["batches"] += len(batches)
            self.stats["rows"] += len(rows)
            self.stats["batched_rows"] += sum(len(b) for b in batches if len(b) > 1)
            answers: list[list[float]] = [[] for _ in items]
            for (k, _), score in zip(rows, scores):
                answers[k].append(score)
            for (_, future), answer in zip(items, answers):
                future.set_result(answer)
