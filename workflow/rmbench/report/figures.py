"""Figures from tidy tables (matplotlib, written as PDF and PNG)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from rmbench.plan.cells import parse_params
from rmbench.report.caveat import with_caveat


def save(fig, pdf_path: str | Path) -> None:
    pdf_path = Path(pdf_path)
    pdf_path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(pdf_path, bbox_inches="tight")
    fig.savefig(pdf_path.with_suffix(".png"), dpi=150, bbox_inches="tight")
    plt.close(fig)


def panel_grid(rows: int, columns: int, column_width: float, height: float):
    """A figure of rows x columns panels, laid out by matplotlib's constrained layout so that no
    panel's axis label, tick labels or title runs into its neighbour's (the suptitle included)."""
    return plt.subplots(
        rows, columns, figsize=(column_width * columns, height), squeeze=False, layout="constrained"
    )


def finish(fig, axes, has_panels: bool, title: str, pdf_path: str | Path) -> None:
    """Titles the figure (saying so when no launch succeeded) and writes it."""
    if not has_panels:
        axes[0][0].text(0.5, 0.5, "no successful launches", ha="center", va="center")
    fig.suptitle(with_caveat(title, "\n"), fontsize=10)
    save(fig, pdf_path)


def latency_figure(table: pd.DataFrame, set_name: str, pdf_path: str | Path) -> None:
    """Per-launch-median latency (mean and 95% CI across launches) per runtime, one column per
    model and device that has results: p50 on top, p95 below, each on its own axis (a shared one
    would squeeze the p50 differences, the headline, under p95s three to four times as long)."""
    ok = table[(table["launches_ok"] > 0) & (table["set"] == set_name)]
    panels = sorted(ok.groupby(["model", "device"]).groups)
    fig, axes = panel_grid(2, max(1, len(panels)), 4.2, 4.8)
    for column, (model, device) in enumerate(panels):
        sub = ok[(ok["model"] == model) & (ok["device"] == device)]  # same runtime order in every panel
        x = list(range(len(sub)))
        for row, (metric, marker) in enumerate((("p50", "o"), ("p95", "s"))):
            ax = axes[row][column]
            mean = sub[f"{metric}_ms"]
            err = [mean - sub[f"{metric}_ms_lo"].fillna(mean), sub[f"{metric}_ms_hi"].fillna(mean) - mean]
            ax.errorbar(x, mean, yerr=err, fmt=marker, capsize=4, color=f"C{row}")
            # Names below only, slanted and right-aligned so that long variant names do not overlap.
            ax.set_xticks(x, sub["runtime"] if row else [], rotation=30, ha="right")
            ax.set_ylabel(f"{metric} per row, ms")
            ax.set_ylim(bottom=0)
            ax.grid(axis="y", alpha=0.3)
        axes[0][column].set_title(f"{model} ({device})")
    finish(
        fig,
        axes,
        bool(panels),
        f"Latency per row on {set_name}: mean of per-launch p50 and p95, 95% CI",
        pdf_path,
    )


def _other_settings(variant: str) -> str:
    """', padding=max_length' for 'batching~naive+batch~2+padding~max_length' ('' for none)."""
    params = parse_params(variant)
    return "".join(f", {k}={v}" for k, v in params.items() if k not in ("batching", "batch", "token_budget"))


def batching_figure(table: pd.DataFrame, set_name: str, pdf_path: str | Path) -> None:
    """Throughput against batch size, one line per strategy with its 95% CI band; one row of panels
    per model and device, one column per runtime; batch size 1 (every row alone) as the dashed
    reference line. A strategy keeps its colour in every panel, named once in the legend below."""
    ok = table[(table["launches_ok"] > 0) & (table["set"] == set_name)].copy()
    params = ok["variant"].str.extract(r"batching~(?P<strategy>[a-z_]+)\+batch~(?P<batch>\d+)")
    ok = ok.join(params).assign(batch=lambda t: t["batch"].astype(int))
    # A variant's other settings (padding to the max length, another export) make a line of their
    # own: naive batches padded to 512 tokens are not the naive line. The reference stays b=1 as is.
    ok["strategy"] = ok["strategy"] + ok["variant"].map(_other_settings)
    rows = sorted(ok.groupby(["model", "device"]).groups)
    runtimes = sorted(ok["runtime"].unique())
    colours = {s: f"C{i % 10}" for i, s in enumerate(sorted(set(ok["strategy"]) - {"none"}))}
    markers = {s: "osD^v<>"[i // 10 % 7] for i, s in enumerate(colours)}  # past ten colours, new marks
    fig, axes = panel_grid(max(1, len(rows)), max(1, len(runtimes)), 3.6, 2.9 * max(1, len(rows)) + 0.8)
    for r, (model, device) in enumerate(rows):
        for c, runtime in enumerate(runtimes):
            ax = axes[r][c]
            sub = ok[(ok["model"] == model) & (ok["device"] == device) & (ok["runtime"] == runtime)]
            if sub.empty:
                ax.set_axis_off()
                continue
            for strategy, line in sub[sub["strategy"] != "none"].groupby("strategy"):
                line = line.sort_values("batch")
                style = {"color": colours[strategy], "marker": markers[strategy]}
                ax.plot(line["batch"], line["throughput_rps"], label=strategy, **style)
                ax.fill_between(
                    line["batch"],
                    line["throughput_rps_lo"].fillna(line["throughput_rps"]),
                    line["throughput_rps_hi"].fillna(line["throughput_rps"]),
                    color=colours[strategy],
                    alpha=0.15,
                )
            alone = sub[sub["strategy"] == "none"]
            if not alone.empty:
                ax.axhline(alone["throughput_rps"].iloc[0], color="black", ls="--", lw=1, label="b=1 (alone)")
            ax.set_xscale("log", base=2)
            sizes = sorted(sub["batch"].unique())
            ax.set_xticks(sizes, [str(b) for b in sizes])
            ax.set_xlabel("batch size")
            ax.set_ylabel("rows per second")
            ax.set_ylim(bottom=0)
            ax.set_title(f"{model}, {runtime} ({device})", fontsize=9)
            ax.grid(alpha=0.3)
    labels = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            labels.setdefault(label, handle)
    if labels:
        fig.legend(labels.values(), labels.keys(), loc="outside lower center", ncols=4, fontsize=7)
    finish(
        fig,
        axes,
        bool(rows),
        f"Throughput by batching strategy on {set_name}: mean over launches, 95% CI",
        pdf_path,
    )


def concurrency_figure(table: pd.DataFrame, set_name: str, pdf_path: str | Path) -> None:
    """Throughput (top) and per-request p50 latency (bottom) against the number of concurrent
    clients, one line per mode with its 95% CI band, one column per model, device and runtime."""
    ok = table[(table["launches_ok"] > 0) & (table["set"] == set_name)].copy()
    params = ok["variant"].str.extract(r"mode~(?P<mode>[a-z_]+)\+clients~(?P<clients>\d+)(?P<extra>.*)")
    # A line per mode and setting (e.g. max_batch~1 of the batching server).
    ok = ok.join(params).assign(
        clients=lambda t: t["clients"].astype(int),
        mode=lambda t: t["mode"] + t["extra"].str.replace("+", " ").str.replace("~", "="),
    )
    panels = sorted(ok.groupby(["model", "device", "runtime"]).groups)
    width = max(1, len(panels))
    fig, axes = panel_grid(2, width, 3.6, 6.2)
    for col, (model, device, runtime) in enumerate(panels):
        sub = ok[(ok["model"] == model) & (ok["device"] == device) & (ok["runtime"] == runtime)]
        single = sub[sub["clients"] == 1]
        for row, (metric, label) in enumerate(
            (("throughput_rps", "rows per second"), ("p50_ms", "p50 per request, ms"))
        ):
            ax = axes[row][col]
            for mode, line in sub.groupby("mode"):
                # Every mode starts from the one-client cell: with one client they are the same.
                line = pd.concat([line, single]).drop_duplicates("clients").sort_values("clients")
                ax.plot(line["clients"], line[metric], marker="o", label=mode.replace("_", " "))
                lo, hi = line[f"{metric}_lo"].fillna(line[metric]), line[f"{metric}_hi"].fillna(line[metric])
                ax.fill_between(line["clients"], lo, hi, alpha=0.2)
            ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(sub["clients"].unique()), [str(c) for c in sorted(sub["clients"].unique())])
            ax.set_xlabel("concurrent clients")
            ax.set_ylabel(label)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            if row == 0:
                ax.set_title(f"{model}, {runtime} ({device})", fontsize=9)
                ax.legend(fontsize=6)
    finish(fig, axes, bool(panels), f"Concurrency on {set_name}: mean over launches, 95% CI", pdf_path)


# The studies with a figure of their own (rule study_figure): paper/figures/<study>.pdf
FIGURES = {"latency": latency_figure, "batching": batching_figure, "concurrency": concurrency_figure}


def decomposition_figure(
    table: pd.DataFrame,
    set_name: str,
    pdf_path: str | Path,
    ceilings: dict[str, tuple[str, float]] | None = None,
    probed: dict[str, float] | None = None,
) -> None:
    """Per model: each step's per-row p50 (top) and achieved GFLOP/s (bottom) with 95% CIs, the
    measured fp32 GEMM ceiling as a dashed line where the gemm study ran, and the mean of the
    ceilings probed in the launches themselves (`probed`, per model) as a dotted one."""
    ok = table[(table["launches_ok"] > 0) & (table["set"] == set_name)]
    panels = sorted(ok.groupby(["model", "device"]).groups)
    width = max(1, len(panels))
    fig, axes = panel_grid(2, width, 5.5, 7.0)
    for col, (model, device) in enumerate(panels):
        sub = ok[(ok["model"] == model) & (ok["device"] == device)]
        x = range(len(sub))
        for row, (metric, label) in enumerate(
            (("p50_ms", "per-row p50, ms"), ("gflops", "achieved GFLOP/s"))
        ):
            ax = axes[row][col]
            mean = sub[metric]
            err = [mean - sub[f"{metric}_lo"].fillna(mean), sub[f"{metric}_hi"].fillna(mean) - mean]
            ax.bar(x, mean, yerr=err, capsize=3, color="tab:blue" if row == 0 else "tab:green", alpha=0.8)
            if row == 1 and ceilings and model in ceilings:
                library, rate = ceilings[model]
                ax.axhline(rate, color="black", linestyle="--", label=f"fp32 GEMM ceiling ({library})")
            if row == 1 and probed and model in probed:
                ax.axhline(probed[model], color="grey", linestyle=":", label="ceiling probed in the launches")
            if row == 1 and ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7)
            # step names under the bottom row only (the top row shares its order)
            ax.set_xticks(
                list(x), sub["step"] if row == 1 else [""] * len(sub), rotation=60, ha="right", fontsize=7
            )
            ax.set_ylabel(label)
            ax.grid(axis="y", alpha=0.3)
            if row == 0:
                ax.set_title(f"{model} ({device})")
    finish(
        fig,
        axes,
        bool(panels),
        f"Where the speed comes from on {set_name}: mean over launches, 95% CI",
        pdf_path,
    )


def gap_figure(gap: pd.DataFrame, set_name: str, pdf_path: str | Path) -> None:
    """Per model, each path from eager as a waterfall: a step's bar runs from the p50 of the step
    before it to its own (green: it saves time, red: it costs), its own p50 with its 95% CI as a
    point; the eager bar is the reference every path starts from."""
    panels = sorted(gap.groupby(["model", "device"]).groups) if len(gap) else []
    fig, axes = panel_grid(1, max(1, len(panels)), 5.5, 6.0)  # tall: the step names are long
    for ax, (model, device) in zip(axes[0], panels):
        sub = gap[(gap["model"] == model) & (gap["device"] == device)].reset_index(drop=True)
        for x, r in sub.iterrows():
            before = r.p50_ms + r.saves_ms if pd.notna(r.saves_ms) else 0.0
            color = "grey" if pd.isna(r.saves_ms) else ("tab:green" if r.saves_ms >= 0 else "tab:red")
            ax.bar(x, r.p50_ms - before, bottom=before, color=color, alpha=0.7)
            err = [[r.p50_ms - r.p50_ms_lo], [r.p50_ms_hi - r.p50_ms]]
            ax.errorbar(x, r.p50_ms, yerr=err, fmt="o", color="black", capsize=3, markersize=3)
        # each path named above its steps, a dotted line where the next begins (eager opens the first)
        for path, steps in sub.iloc[1:].groupby("path", sort=False):
            ax.axvline(steps.index[0] - 0.5, color="black", linestyle=":", linewidth=0.8)
            ax.text(
                steps.index.to_numpy().mean(),
                1.01,
                path.replace(" ", "\n"),  # one word a line: a one-step path is narrow
                transform=ax.get_xaxis_transform(),
                ha="center",
                fontsize=8,
            )
        ax.set_xticks(list(sub.index), sub["adds"], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("per-row p50, ms")
        ax.set_ylim(bottom=0)
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(f"{model} ({device})", pad=14)
    finish(
        fig,
        axes,
        bool(panels),
        f"From eager to each runtime on {set_name}: what each step saves (green) or costs (red)",
        pdf_path,
    )
