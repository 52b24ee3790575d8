"""The concurrency scenario on a tiny real model: every mode on every runtime scores the whole set
correctly, engines are counted and threaded as the mode says, no worker or server outlives its
launch, and the micro-batching server coalesces requests, rejects a full queue and times out."""

import os
import subprocess
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from rmbench.export.onnx import reference_scores
from rmbench.models.build import load_tokenizer
from rmbench.report.tables import variant_label
from rmbench.runtimes.batching import BatchCostModel, MicroBatcher, QueueFull
from rmbench.runtimes.ort_python import OrtPythonRuntime
from rmbench.service.app import Limits, create_app
from rmbench.studies.concurrency import partitioned_threads, shard
from rmbench.studies.launch import run_launch

SETTINGS = {"threads": 2, "warmup_rows": 1, "timeout_s": 900, "max_length": 512, "tolerance": 1e-4}


@pytest.fixture(scope="module")
def reference(tiny_model):
    return reference_scores(tiny_model["model"], tiny_model["rows"], threads=1)


def launch(tiny_model, reference, runtime, mode, clients, **options):
    cell = {
        "study": "concurrency",
        "model": "tiny",
        "device": "cpu",
        "runtime": runtime,
        "params": f"set~t+mode~{mode}+clients~{clients}",
        "launch": 1,
    }
    options = {"mode": mode, "clients": str(clients)} | options
    return run_launch(
        cell, tiny_model["rows"], reference, tiny_model["model"], tiny_model["onnx"], SETTINGS, options
    )


def children() -> set[int]:
    """This process's live child processes."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if fields[0] != "Z" and int(fields[1]) == os.getpid():
            found.add(int(stat.parent.name))
    return found


def test_threads_split_the_cores_and_processes_take_every_nth_row():
    assert [partitioned_threads(8, n) for n in (1, 2, 3, 4, 8, 16)] == [8, 4, 2, 2, 1, 1]
    assert shard(7, 3) == [[0, 3, 6], [1, 4], [2, 5]]
    assert variant_label("mode~shared+clients~8+max_batch~1") == "shared c=8 max_batch=1"


@pytest.mark.parametrize("runtime", ["ort_python", "hf_eager", "native"])
@pytest.mark.parametrize(
    "mode,clients,engines,threads",
    [
        ("shared", 3, 1, 2),
        ("independent_threads", 3, 3, 2),
        ("independent_partitioned", 2, 2, 1),
        ("independent_processes", 2, 2, 2),
    ],
)
def test_every_mode_scores_the_whole_set(
    tiny_model, reference, binary, runtime, mode, clients, engines, threads
):
    before = children()
    record = launch(tiny_model, reference, runtime, mode, clients, binary=str(binary))
    assert record["status"] == "ok", record["reason"]
    m = record["metrics"]
    assert len(m["scores"]) == len(m["latencies_ms"]) == len(tiny_model["rows"])
    assert m["max_abs_err"] <= 1e-4  # every row scored once, in row order
    assert (m["engines"], m["threads_per_engine"]) == (engines, threads)
    assert m["throughput_rps"] == pytest.approx(len(tiny_model["rows"]) / m["wall_s"])
    assert 0 < m["p50_ms"] <= m["p95_ms"] <= m["max_ms"]
    assert children() <= before  # no worker process left behind


def test_a_failing_engine_process_is_named_and_leaves_nothing(tiny_model, reference, binary, tmp_path):
    before = children()
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    cell = {"study": "concurrency", "model": "tiny", "device": "cpu", "runtime": "native"}
    cell |= {"params": "set~t+mode~independent_processes+clients~2", "launch": 1}
    options = {"mode": "independent_processes", "clients": "2", "binary": str(binary)}
    with pytest.raises(RuntimeError, match=r"engine process 1 of 2 failed to load"):
        run_launch(cell, tiny_model["rows"], reference, tiny_model["model"], broken, SETTINGS, options)
    assert children() <= before


def test_services_take_concurrent_http_clients(tiny_model, reference):
    before = children()
    for runtime in ("fastapi", "batching_server"):
        record = launch(tiny_model, reference, runtime, "shared", 4, queue_delay_ms=50)
        assert record["status"] == "ok", record["reason"]
    m = record["metrics"]  # the micro-batching server's own count of what it scored
    assert m["server_rows"] == len(tiny_model["rows"]) + SETTINGS["warmup_rows"]
    assert m["server_batches"] < m["server_rows"]  # 4 clients, a 50 ms window: requests were coalesced
    independent = launch(tiny_model, reference, "fastapi", "independent_threads", 2)
    assert independent["status"] == "unsupported" and "one service" in independent["reason"]
    assert children() <= before


@pytest.fixture(scope="module")
def ort_runtime(tiny_model):
    runtime = OrtPythonRuntime(tiny_model["model"], tiny_model["onnx"], "cpu", 1, 512)
    runtime.load()
    return runtime


def count_tokens_of(tiny_model):
    tokenizer = load_tokenizer(tiny_model["model"])
    return lambda pairs: [len(tokenizer(p, r, truncation=True)["input_ids"]) for p, r in pairs]


def test_micro_batcher_plans_length_aware_batches_and_answers_in_order(tiny_model, reference, ort_runtime):
    batcher = MicroBatcher(ort_runtime, count_tokens_of(tiny_model), "length_aware", 4, 4096, 5.0, 64)
    pairs = [(r["prompt"], r["response"]) for r in tiny_model["rows"]]
    futures = [batcher.submit(pairs[:3]), batcher.submit(pairs[3:4]), batcher.submit(pairs[4:])]
    batcher.start()  # all three are queued: one round, 4 rows per batch at most
    scores = [s for f in futures for s in f.result(timeout=60)]
    assert scores == pytest.approx(reference, abs=1e-4)
    assert batcher.stats["rounds"] >= 1 and batcher.stats["rows"] == len(pairs)


def test_adaptive_server_scores_every_request(tiny_model, reference):
    before = children()
    record = launch(tiny_model, reference, "batching_server", "shared", 4, adaptive="on", queue_delay_ms=50)
    assert record["status"] == "ok", record["reason"]  # every row matched its reference score
    m = record["metrics"]
    assert m["server_rows"] == len(tiny_model["rows"]) + SETTINGS["warmup_rows"]
    assert 0 <= m["server_batched_rows"] <= m["server_rows"]
    assert children() <= before


def test_cost_model_keeps_a_batch_only_where_it_pays():
    model = BatchCostModel(alpha=0.5, explore_every=1000)
    assert model.keeps_batch([10, 12])  # nothing measured: try the batch first
    model.observe(2, 2 * 12, 24.0)  # 1 ms per padded token in a batch of 2
    assert not model.keeps_batch([10, 12])  # rows alone not measured yet: measure them
    model.observe(1, 10, 5.0)  # 0.5 ms per token alone: the batch costs twice as much
    assert model.plan([10, 12, 30], [[0, 1], [2]]) == [[0], [1], [2]]
    for _ in range(3):  # batches become cheap: 0.25 ms per padded token, averaged in
        model.observe(2, 24, 6.0)
    assert model.ms_per_token[2] == pytest.approx(0.34375)
    assert model.keeps_batch([12, 12]) and model.plan([12, 12], [[1, 0]]) == [[1, 0]]
    assert not model.keeps_batch([2, 12])  # ... but not with that much padding
    model.observe(2, 0, 1.0)  # nothing to learn from an empty batch
    assert model.ms_per_token[2] == pytest.approx(0.34375)
    model.observe(8, 80, 160.0)  # 2 ms per padded token in batches of 8
    assert [model.batch_cost(n) for n in (3, 5, 6, 8)] == pytest.approx([0.34375, 0.34375, 2.0, 2.0])


def test_cost_model_calibrates_on_copies_of_one_pair():
    calls = []

    def score(pairs):  # a batch of n copies costs n x 2 ms, a row alone 1 ms
        calls.append(len(pairs))
        time.sleep(0.001 * (2 * len(pairs) if len(pairs) > 1 else 1))
        return [0.0] * len(pairs)

    model = BatchCostModel()
    model.calibrate(score, ("p", "r"), tokens=10, sizes=[2, 4])
    assert calls == [1, 1, 1, 2, 2, 4, 4]  # one untimed call, then each size twice
    assert model.ms_per_token[1] < model.ms_per_token[2]
    assert not model.keeps_batch([10, 10])  # batches cost twice as much per token here


def test_cost_model_takes_the_other_plan_every_nth_decision():
    model = BatchCostModel(explore_every=4)
    model.observe(1, 10, 5.0)
    model.observe(2, 20, 20.0)  # batches lose: split, except every 4th decision
    assert [model.keeps_batch([10, 10]) for _ in range(8)] == [False] * 3 + [True] + [False] * 3 + [True]


class PaddingCostsDouble:
    """An engine whose batches cost twice their padded tokens and whose rows alone cost their
    tokens (in sleeps of 0.1 ms a token: far above the scheduling delays of a loaded 2-core host,
    where the tests run beside the smoke run); it answers each pair with its token length."""

    def __init__(self, pairs, lengths):
        self.lengths, self.sizes = dict(zip(pairs, lengths, strict=True)), []

    def score(self, pairs):
        lengths = [self.lengths[pair] for pair in pairs]
        self.sizes.append(len(pairs))
        time.sleep(len(pairs) * max(lengths) * (2 if len(pairs) > 1 else 1) * 1e-4)
        return [float(n) for n in lengths]


def test_adaptive_micro_batcher_learns_that_batches_do_not_pay(tiny_model):
    pairs = [(r["prompt"], r["response"]) for r in tiny_model["rows"]]
    count = count_tokens_of(tiny_model)
    engine = PaddingCostsDouble(pairs, count(pairs))
    batcher = MicroBatcher(engine, count, "length_aware", 4, 4096, 0.05, 64, BatchCostModel())
    rounds = [[batcher.submit([pair]) for pair in pairs] for _ in range(6)]
    batcher.start()  # 60 queued requests: 15 collections of 4 rows
    for futures in rounds:  # every request answered with its own row's value
        assert [f.result(timeout=60)[0] for f in futures] == count(pairs)
    assert engine.sizes[0] == 4 and engine.sizes[1:5] == [1] * 4  # the batch, then rows alone
    assert set(engine.sizes[5:]) == {1}  # learned: rows alone from then on
    assert batcher.stats["batched_rows"] == 4 and batcher.stats["rows"] == 60


def test_micro_batcher_rejects_a_full_queue_and_drops_expired_requests(tiny_model, ort_runtime):
    pair = (tiny_model["rows"][0]["prompt"], tiny_model["rows"][0]["response"])
    full = MicroBatcher(ort_runtime, count_tokens_of(tiny_model), "length_aware", 8, 4096, 0.0, 1)
    full.submit([pair])
    with pytest.raises(QueueFull, match="queue full"):
        full.submit([pair])
    slow = MicroBatcher(ort_runtime, count_tokens_of(tiny_model), "length_aware", 8, 4096, 0.5, 8)
    slow.start()
    client = TestClient(create_app(ort_runtime, slow, Limits(request_timeout_s=0.01)))
    body = {"pairs": [{"prompt": pair[0], "response": pair[1]}]}
    answer = client.post("/score", json=body)
    assert answer.status_code == 504 and "not scored within" in answer.json()["detail"]
    assert client.post("/score", json={"pairs": [{"prompt": 1, "response": "x"}]}).status_code == 422
    assert client.post("/score", json={}).status_code == 422


def test_service_answers_503_when_its_queue_is_full(tiny_model, ort_runtime):
    batcher = MicroBatcher(ort_runtime, count_tokens_of(tiny_model), "length_aware", 8, 4096, 0.0, 1)
    pair = {"prompt": tiny_model["rows"][0]["prompt"], "response": tiny_model["rows"][0]["response"]}
    batcher.submit([(pair["prompt"], pair["response"])])  # fills the queue; the batcher is not started
    answer = TestClient(create_app(ort_runtime, batcher)).post("/score", json={"pairs": [pair]})
    assert answer.status_code == 503 and "queue full" in answer.json()["detail"]
    assert int(answer.headers["Retry-After"]) >= 1  # when to come back
    # the reward endpoint shares the queue
    query = {"query": [pair["prompt"] + " " + pair["response"]]}
    answer = TestClient(create_app(ort_runtime, batcher)).post("/get_reward", json=query)
    assert answer.status_code == 503 and "queue full" in answer.json()["detail"]
    # one engine without a micro-batcher bounds its waiting requests too (none may wait here)
    plain = TestClient(create_app(ort_runtime, None, Limits(queue_size=0)))
    assert plain.post("/get_reward", json=query).status_code == 503
    assert TestClient(create_app(ort_runtime, None)).post("/get_reward", json=query).status_code == 200


def test_native_engine_waits_for_go(tiny_model, binary, tmp_path):
    from rmbench.models.data import write_jsonl

    rows = tmp_path / "rows.jsonl"
    write_jsonl(tiny_model["rows"][:2], rows)
    cmd = [str(binary), "--model", str(tiny_model["onnx"]), "--tokenizer", str(tiny_model["model"])]
    cmd += ["--input", str(rows), "--output", str(tmp_path / "out.json"), "--wait-for-go"]
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "ready"
    proc.stdin.close()  # the launch went away before saying go: the engine stops, with a message
    assert proc.wait(timeout=30) == 2 and "stdin closed before the go line" in proc.stderr.read()


def test_each_server_setting_is_compared_with_the_engines_at_its_concurrency():
    import pandas as pd
    from rmbench.report.tables import service_verdicts
    from rmbench.runtimes import service_baselines
    from rmbench.stats.across_launches import Checks

    def launches(runtime, variant, row_ms):
        base = {"model": "m", "device": "cpu", "set": "s", "status": "ok", "runtime": runtime}
        return [base | {"variant": variant, "row_ms": ms} for ms in row_ms]

    table = pd.DataFrame(
        launches("ort_python", "mode~shared+clients~8", [100, 101, 99])
        + launches("batching_server", "mode~shared+clients~8", [200, 202, 198])
        + launches("batching_server", "mode~shared+clients~8+max_batch~1", [100, 102, 98])
        + launches("batching_server", "mode~shared+clients~8+adaptive~on", [101, 103, 99])
        + launches("batching_server", "mode~shared+clients~1", [90, 91, 89])  # no engine at c=1
    )
    statements = sorted(
        service_verdicts(table, "row_ms", Checks(bootstrap=200), service_baselines()).statement
    )
    assert statements == [
        "batching_server adaptive=on vs ort_python at shared c=8: 0.99x, CIs overlap",
        "batching_server max_batch=1 vs ort_python at shared c=8: 1.00x, CIs overlap",
        "batching_server vs ort_python at shared c=8: 0.50x, CIs apart",
    ]
