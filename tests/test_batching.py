"""The batching scenario on a tiny real model: every batching runtime plans the same batches,
returns scores in the rows' order, and reports throughput and padding waste."""

import math
import random

import pytest
from rmbench.export.onnx import reference_scores
from rmbench.models.build import count_tokens, encode, load_tokenizer
from rmbench.report.tables import variant_label, verdict_list, with_padding_bound
from rmbench.runtimes.batching import batch_plan, make_batches, padding_waste
from rmbench.studies.launch import run_launch

SETTINGS = {"threads": 1, "warmup_rows": 1, "timeout_s": 600, "max_length": 512, "tolerance": 1e-4}


@pytest.fixture(scope="module")
def rows(tiny_model):
    """The tiny rows shuffled (arrival order must not matter), with their token counts."""
    shuffled = random.Random(3).sample(tiny_model["rows"], len(tiny_model["rows"]))
    count_tokens(shuffled, {"tiny": load_tokenizer(tiny_model["model"])})
    return shuffled


@pytest.fixture(scope="module")
def reference(tiny_model, rows):
    return reference_scores(tiny_model["model"], rows, threads=1)


def batching_launch(tiny_model, rows, reference, runtime, binary=None, **variant):
    cell = {
        "study": "batching",
        "model": "tiny",
        "device": "cpu",
        "runtime": runtime,
        "params": "set~t",
        "launch": 1,
    }
    options = {k: str(v) for k, v in variant.items()} | {"binary": binary}
    return run_launch(cell, rows, reference, tiny_model["model"], tiny_model["onnx"], SETTINGS, options)


@pytest.mark.parametrize("runtime", ["hf_eager", "ort_python", "native"])
@pytest.mark.parametrize(
    "variant",
    [
        {"batching": "none", "batch": 1},
        {"batching": "naive", "batch": 4},
        {"batching": "length_aware", "batch": 4},
        {"batching": "token_budget", "batch": 4, "token_budget": 300},
        {"batching": "waste_bound", "batch": 4, "max_waste": 0.5},
    ],
)
def test_batched_scores_come_back_in_row_order(tiny_model, rows, reference, binary, runtime, variant):
    record = batching_launch(tiny_model, rows, reference, runtime, binary, **variant)
    assert record["status"] == "ok", record["reason"]  # every score matches its own row's reference
    m = record["metrics"]
    lengths = [min(r["tokens_tiny"], 512) for r in rows]
    assert m["batches"] == make_batches(lengths, *batch_plan({k: str(v) for k, v in variant.items()}))
    assert m["n_batches"] == len(m["batch_ms"]) == len(m["batches"])
    assert m["throughput_rps"] == pytest.approx(len(rows) / m["wall_s"])
    assert m["padding_waste"] == pytest.approx(padding_waste(lengths, m["batches"]))
    if variant["batching"] == "none":
        assert m["padding_waste"] == 0 and m["n_batches"] == len(rows)


def test_length_aware_pads_less_than_naive(rows):
    lengths = [r["tokens_tiny"] for r in rows]
    naive = padding_waste(lengths, make_batches(lengths, "naive", 4))
    assert padding_waste(lengths, make_batches(lengths, "length_aware", 4)) < naive


def test_batch_plan_reads_cell_parameters():
    assert batch_plan({"batching": "naive", "batch": "8"}) == ("naive", 8, 4096, 0.02)
    assert batch_plan({"batching": "token_budget", "batch": "8", "token_budget": "512"}) == (
        "token_budget",
        8,
        512,
        0.02,
    )
    assert batch_plan({"batching": "waste_bound", "batch": "8", "max_waste": "0.1"})[3] == 0.1
    assert batch_plan({}) == ("none", 1, 4096, 0.02)


def test_waste_bound_batches_only_rows_of_nearly_one_length():
    lengths = [100, 98, 60, 61, 200]
    # sorted 60, 61, 98, 100, 200: 2 x 61 = 122 <= 1.02 x 121; 3 x 98 > 1.02 x 219 -> new batch;
    # 2 x 100 <= 1.02 x 198; 3 x 200 > 1.02 x 398 -> new batch (as native/tests/test_native.cpp)
    assert make_batches(lengths, "waste_bound", 8, max_waste=0.02) == [[2, 3], [1, 0], [4]]
    assert make_batches(lengths, "waste_bound", 8, max_waste=0.0) == [[2], [3], [1], [0], [4]]
    assert make_batches(lengths, "waste_bound", 1, max_waste=10.0) == [[2], [3], [1], [0], [4]]  # size bound
    many = make_batches(lengths, "waste_bound", 8, max_waste=10.0)
    assert many == [[2, 3, 1, 0, 4]] and padding_waste(lengths, many) <= 10.0


def test_verdict_list_reads_like_the_paper():
    import pandas as pd

    comparisons = pd.DataFrame(
        {
            "model": ["m", "m"],
            "metric": ["row_ms", "row_ms"],
            "candidate": ["batching~naive+batch~8", "batching~length_aware+batch~4"],
            "baseline": ["batching~none+batch~1"] * 2,
            "speedup": [0.13, 1.09],
            "speedup_boot_lo": [math.nan, 1.04],  # two launches of one side: no interval
            "speedup_boot_hi": [math.nan, 1.14],
            "speedup_paired": [math.nan, math.nan],  # launches not paired by round
            "speedup_paired_lo": [math.nan, math.nan],
            "speedup_paired_hi": [math.nan, math.nan],
            "speedup_conservative": [0.1, 0.99],
            "verdict": ["slower", "not distinguishable"],
        }
    )
    statements = verdict_list(comparisons, "batching~none+batch~1", "row_ms")["statement"].tolist()
    assert statements == [
        "naive b=8 vs none b=1: 0.13x, CIs apart",
        "length_aware b=4 vs none b=1: 1.09x [1.04, 1.14], CIs overlap",
    ]
    # launches paired by round give the speed-up a second interval, where there are pairs
    # (the rounds' geometric mean, which need not equal the ratio of means over every launch)
    paired = comparisons.assign(
        speedup_paired=[math.nan, 1.12],
        speedup_paired_lo=[math.nan, 1.03],
        speedup_paired_hi=[math.nan, 1.16],
    )
    assert verdict_list(paired, "batching~none+batch~1", "row_ms")["statement"].tolist()[1] == (
        "length_aware b=4 vs none b=1: 1.09x [1.04, 1.14], paired by round 1.12x [1.03, 1.16], CIs overlap"
    )
    assert variant_label("zero_copy~on+prealloc~off") == "zero_copy=on, prealloc=off"


def test_repeat_batches_copies_of_each_row_without_padding(tiny_model, rows, reference, binary):
    lengths = [5, 9, 7]
    batches = make_batches(lengths, "repeat", 3)
    assert batches == [[0, 0, 0], [1, 1, 1], [2, 2, 2]] and padding_waste(lengths, batches) == 0
    record = batching_launch(tiny_model, rows, reference, "ort_python", batching="repeat", batch=4)
    assert record["status"] == "ok", record["reason"]
    m = record["metrics"]  # every copy scored: throughput counts the rows scored
    assert m["throughput_rps"] == pytest.approx(4 * len(rows) / m["wall_s"])
    assert m["padding_waste"] == 0 and m["max_abs_err"] <= 1e-4
    native = batching_launch(tiny_model, rows, reference, "native", str(binary), batching="repeat", batch=4)
    assert native["status"] == "unsupported" and "no 'repeat' batching" in native["reason"]


@pytest.mark.parametrize("runtime", ["hf_eager", "ort_python"])
def test_padding_to_max_length_pads_every_row_and_keeps_the_scores(tiny_model, rows, reference, runtime):
    tokenizer = load_tokenizer(tiny_model["model"])
    enc = encode(tokenizer, [("a b", "c"), ("a", "b c d e")], "np", 40, padding="max_length")
    assert enc["input_ids"].shape == (2, 40) and enc["attention_mask"].sum() < 80
    record = batching_launch(
        tiny_model, rows, reference, runtime, batching="naive", batch=2, padding="max_length"
    )
    assert record["status"] == "ok", record["reason"]  # the masked padding changes no score
    m = record["metrics"]
    lengths = [min(r["tokens_tiny"], 512) for r in rows]
    assert m["padding_waste"] == pytest.approx(512 * len(rows) / sum(lengths) - 1)
    assert m["padding_waste"] > padding_waste(lengths, m["batches"])


def test_a_chat_model_does_not_pad_to_max_length(tiny_decoder):
    """Its rows are kept whole up to its context (models.row_limit): that is what it would pad to."""
    from rmbench.models.families import family_of_folder
    from rmbench.runtimes import runtime_class

    declared = family_of_folder(tiny_decoder["model"])
    reason = runtime_class("ort_python").family_reason(declared, {"padding": "max_length"})
    assert "would pad it to that context" in reason
    assert runtime_class("ort_python").family_reason(declared, {"padding": "longest"}) is None
    with pytest.raises(ValueError, match="would pad it to that context"):
        encode(load_tokenizer(tiny_decoder["model"]), [("a", "b")], "np", 512, padding="max_length")


def test_padding_waste_to_a_fixed_length_and_refusals(tiny_model, rows, reference, binary):
    assert padding_waste([5, 9, 7], [[0, 1], [2]], pad_to=16) == pytest.approx((48 - 21) / 21)
    native = batching_launch(
        tiny_model, rows, reference, "native", str(binary), batching="naive", batch=2, padding="max_length"
    )
    assert native["status"] == "unsupported" and "no padding to max_length" in native["reason"]
    with pytest.raises(ValueError, match="padding must be one of longest, max_length"):
        batching_launch(tiny_model, rows, reference, "ort_python", batching="naive", batch=2, padding="fixed")


def test_the_padding_bound_of_each_verdict():
    import pandas as pd

    keys = {"model": "m", "device": "cpu", "set": "s", "runtime": "r"}
    verdicts = pd.DataFrame(
        [
            keys
            | {
                "candidate": "batching~naive+batch~2",
                "baseline": "batching~none+batch~1",
                "speedup": 0.4,
                "statement": "naive b=2 vs none b=1: 0.40x, CIs apart",
            }
        ]
    )
    summary = pd.DataFrame(
        [
            keys | {"variant": "batching~naive+batch~2", "padding_waste": 0.6},
            keys | {"variant": "batching~none+batch~1", "padding_waste": 0.0},
        ]
    )
    out = with_padding_bound(verdicts, summary).iloc[0]
    assert out.padding_only == pytest.approx(1 / 1.6) and out.per_padded_token == pytest.approx(0.64)
    assert out.statement == "naive b=2 vs none b=1: 0.40x, CIs apart (padding alone: 0.62x)"
    missing = with_padding_bound(verdicts, summary.iloc[1:]).iloc[0]  # no ok launch of the candidate
    assert missing.statement == verdicts.statement[0]


@pytest.mark.parametrize(("dynamic", "timed_compiles"), [("false", 1), ("true", 0)])
def test_torch_compile_batches_say_which_compiled_while_timed(
    tiny_model, rows, reference, tmp_path, dynamic, timed_compiles
):
    """Batches of 4 and 2 rows after one warm-up batch (the first again): static shapes compile
    for the new one inside the timed region, dynamic ones once, in the warm-up. Six rows: each
    compile of the tiny model costs 10-20 s on 2 cores."""
    record = batching_launch(
        tiny_model, rows[:6], reference[:6], "torch_compile", batching="length_aware", batch=4,
        dynamic=dynamic, cache="warm", cache_root=str(tmp_path),
    )  # fmt: skip
    assert record["status"] == "ok", record["reason"]
    m = record["metrics"]
    assert [len(b) for b in m["batches"]] == [4, 2]
    assert len(m["batch_compiled"]) == m["n_batches"] and m["batch_compiled"][0] == 0
    assert m["timed_compiles"] == sum(m["batch_compiled"]) == timed_compiles
    assert m["compiles"] == timed_compiles + 1
