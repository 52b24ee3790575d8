"""The figures drawn from study tables: what each panel shows."""

import matplotlib.pyplot as plt
import pandas as pd
from rmbench.report import figures


def drawn_figure(monkeypatch, draw, *args):
    """The figure `draw` makes, caught before it is written."""
    caught = []
    monkeypatch.setattr(figures, "save", lambda fig, path: caught.append(fig))
    draw(*args)
    return caught[0]


def test_latency_figure_gives_p50_and_p95_their_own_axes(monkeypatch, tmp_path):
    table = pd.DataFrame(
        [
            {"model": model, "device": "cpu", "set": "s", "runtime": runtime, "launches_ok": 3}
            | {"p50_ms": p50, "p50_ms_lo": p50 - 2, "p50_ms_hi": p50 + 2}
            | {"p95_ms": 4 * p50, "p95_ms_lo": 4 * p50 - 9, "p95_ms_hi": 4 * p50 + 9}
            for model in ("deberta", "electra")
            for runtime, p50 in (("hf_eager", 130.0), ("native", 90.0))
        ]
    )
    fig = drawn_figure(monkeypatch, figures.latency_figure, table, "s", tmp_path / "latency.pdf")
    top_left, top_right, bottom_left, _ = fig.axes  # rows of (deberta, electra): p50, then p95
    assert [top_left.get_title(), top_right.get_title()] == ["deberta (cpu)", "electra (cpu)"]
    assert (top_left.get_ylabel(), bottom_left.get_ylabel()) == ("p50 per row, ms", "p95 per row, ms")
    # each metric on its own scale: the p50 axis stops well below the shortest p95
    assert (
        top_left.get_ylim()[1] < table["p95_ms"].min() and bottom_left.get_ylim()[1] >= table["p95_ms"].max()
    )
    assert [t.get_text() for t in bottom_left.get_xticklabels()] == ["hf_eager", "native"]
    assert not any(t.get_text() for t in top_left.get_xticklabels())  # runtime names once, below
    plt.close(fig)


def test_batching_figure_has_a_row_per_model_a_column_per_runtime_and_one_legend(monkeypatch, tmp_path):
    variants = {"none": [1], "naive": [4, 8], "length_aware": [4, 8]}
    table = pd.DataFrame(
        [
            {"model": model, "device": "cpu", "set": "s", "runtime": runtime, "launches_ok": 3}
            | {"variant": f"batching~{strategy}+batch~{batch}", "throughput_rps": rps}
            | {"throughput_rps_lo": rps - 0.5, "throughput_rps_hi": rps + 0.5}
            for model in ("deberta", "electra")
            for runtime in (["native", "ort_python"] if model == "deberta" else ["ort_python"])
            for strategy, sizes in variants.items()
            for batch in sizes
            for rps in [10.0 / batch if strategy == "naive" else 9.0]
        ]
    )
    fig = drawn_figure(monkeypatch, figures.batching_figure, table, "s", tmp_path / "batching.pdf")
    _, ort_deberta, native_electra, ort_electra = fig.axes
    assert ort_electra.get_title() == "electra, ort_python (cpu)" and not native_electra.axison
    colour = {ax.get_title(): {line.get_label(): line.get_color() for line in ax.lines} for ax in fig.axes}
    assert colour["deberta, native (cpu)"]["naive"] == colour["electra, ort_python (cpu)"]["naive"]
    assert colour["deberta, native (cpu)"]["naive"] != colour["deberta, native (cpu)"]["length_aware"]
    (legend,) = fig.legends  # the strategies named once, under the panels
    assert [t.get_text() for t in legend.get_texts()] == ["length_aware", "naive", "b=1 (alone)"]
    assert ort_deberta.get_legend() is None
    plt.close(fig)
