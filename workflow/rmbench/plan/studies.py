"""The studies, declared once: what each compares (STUDIES) and what each writes (OUTPUTS).

The rules (workflow/rules/common.smk), the tables, the findings page and the paper read these.
Every function here takes the validated config and nothing of Snakemake, so a test can ask what a
config produces. A leaf module: it imports nothing of rmbench.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rmbench.models.families import model_family, resolved_export

# What each study compares: launches of different `between` values within a model x device x
# set (x variant) group, on these per-launch metrics (lower is better; the first one decides
# speed-ups and verdicts). Metrics named in `report_only` (higher is better) get intervals but no
# comparisons.
STUDIES = {
    # A runtime's own variant (e.g. another export) is a runtime of its own here, named like a
    # decomposition step ('native optimizer=transformers'), compared with every other runtime.
    "latency": {"between": "runtime", "metrics": ["p50_ms", "p95_ms"], "variant_in_runtime": True},
    # first_pass_us: the first pass over the set, where the tokenizers' word caches are cold.
    "tokenizer": {"between": "runtime", "metrics": ["mean_us", "p50_us", "first_pass_us"]},
    "zerocopy": {"between": "variant", "metrics": ["p50_ms", "p95_ms"]},
    "compile": {
        "between": "variant",
        "metrics": ["p50_ms", "p95_ms", "first_call_s", "recompiles", "miss_max_ms"],
        "report_only": ["first_call_s", "recompiles", "miss_max_ms"],
    },
    "gemm": {"between": "runtime", "metrics": ["layer_ms", "gflops"], "report_only": ["gflops"]},
    # row_ms (wall time per row over the whole set) is 1 / throughput: its speed-up against
    # batch size 1 is the throughput ratio.
    "batching": {
        "between": "variant",
        "metrics": ["row_ms", "throughput_rps", "padding_waste", "batch_p50_ms", "batch_p95_ms"],
        "report_only": ["throughput_rps", "padding_waste", "batch_p50_ms", "batch_p95_ms"],
    },
    # The same for concurrency: against one client on a shared engine; per-request latency
    # percentiles show the queueing.
    "concurrency": {
        "between": "variant",
        "metrics": ["row_ms", "throughput_rps", "p50_ms", "p95_ms"],
        "report_only": ["throughput_rps", "p50_ms", "p95_ms"],
    },
    # A trainer's load on the service (rmbench.studies.load): time per answered request decides, against
    # one client; latency, and what was refused, given up or lost, are reported beside it.
    "load": {
        "between": "variant",
        "metrics": ["row_ms", "throughput_rps", "p50_ms", "p99_ms", "retried_503", "gave_up", "lost"],
        "report_only": ["throughput_rps", "p50_ms", "p99_ms", "retried_503", "gave_up", "lost"],
    },
    # Each scorer beside the rollout generator, per core split: end-to-end time per row (lower is
    # better) decides; what co-location costs each side is reported beside it.
    "colocation": {
        "between": "runtime",
        "metrics": [
            "e2e_row_ms",
            "gen_slowdown",
            "score_slowdown",
            "gen_tokens_per_s_together",
            "e2e_rows_per_s",
            "colocation_gain",
        ],
        "report_only": [
            "gen_slowdown",
            "score_slowdown",
            "gen_tokens_per_s_together",
            "e2e_rows_per_s",
            "colocation_gain",
        ],
    },
    # Steps from eager to ONNX Runtime and past fp32: each runtime x variant is one step
    # (e.g. "ort_python graph=basic"), compared with every other step of the same model.
    "decomposition": {
        "between": "step",
        "within": ["model", "device", "set"],
        "metrics": ["p50_ms", "p95_ms", "gflops"],
        "report_only": ["gflops"],
    },
}

# The latency study's language pair (candidate, baseline): the same engine and ONNX file, called
# from C++ and from Python.
LANGUAGE_PAIR = ("native", "ort_python")
# The runtimes the native engine is held against as peers: the other engines of ONNX graphs. The
# sequential design decides native against each in the block (faster, slower or tied within the
# equivalence margin), as it decides every runtime against the baseline.
ENGINE_PEERS = ("ort_python", "openvino")

# Whose own table the findings page words (batching and concurrency: their verdict tables).
FINDINGS_STUDIES = ("latency", "compile", "tokenizer", "zerocopy", "colocation")

# The studies and outputs only the extended tier makes: the paper tier's config has none.
EXTENDED_STUDIES = ("colocation", "load", "decomposition", "gemm")


def operator_profile_settings(config: dict) -> dict:
    """The batching study's ORT operator profile where it runs (configured, on the CPU), else {}."""
    study = config["studies"].get("batching", {})
    profile = study.get("operator_profile", {})
    return profile if profile.get("batch") and "cpu" in study.get("devices", []) else {}


def torch_profile_runtimes(config: dict) -> list[str]:
    """The PyTorch runtimes the batching study's operator profile covers (those the study runs)."""
    runtimes = config["studies"].get("batching", {}).get("runtimes", {})
    return [r for r in operator_profile_settings(config).get("torch_runtimes", []) if r in runtimes]


def runs_thread_probe(config: dict) -> bool:
    """Whether the batching study probes ORT's thread settings (configured, on the CPU)."""
    study = config["studies"].get("batching", {})
    return bool(study.get("thread_probe")) and "cpu" in study.get("devices", [])


def ceiling_probe_runs(config: dict) -> bool:
    """Whether the latency study probes the GEMM ceiling in its CPU launches."""
    study = config["studies"].get("latency", {})
    return bool(study.get("ceiling_probe")) and "cpu" in study.get("devices", [])


def engine_export(config: dict, model: str) -> str:
    """The export the latency study's ONNX Runtime engines load for `model` (their `optimizer`
    option: the native engine's, else ORT-Python's; `family`: the model family's own; 'none' is
    the stock export)."""
    runtimes = config["studies"]["latency"]["runtimes"]
    engines = [r for r in LANGUAGE_PAIR if r in runtimes]
    optimizer = runtimes[engines[0]].get("options", {}).get("optimizer", "none") if engines else "none"
    return resolved_export(optimizer, model_family(config, model))


def language_pair_runs(config: dict) -> bool:
    return set(LANGUAGE_PAIR) <= set(config["studies"]["latency"]["runtimes"])


def int8_sweep_runs(config: dict) -> bool:
    sweep = config["quantization_sweep"]
    return bool(sweep["models"] and sweep["variants"])


@dataclass(frozen=True)
class Output:
    """A table or figure a study writes, where `when(config, studies)` holds (studies: the
    enabled ones). `findings`: the findings page words it (a LaTeX table's csv)."""

    path: str
    when: Callable[[dict, set[str]], bool] = lambda config, studies: True
    findings: bool = False
    extended: bool = False

    def csv(self) -> str:
        """The table as data: a LaTeX table's csv, or the path itself."""
        return self.path.removesuffix(".tex") + ".csv" if self.path.endswith(".tex") else self.path


OUTPUTS: dict[str, list[Output]] = {
    "latency": [
        Output("paper/figures/latency.pdf"),
        Output("paper/tables/language.tex", lambda c, s: language_pair_runs(c), findings=True),
        Output("paper/tables/replication.tex", findings=True),
        Output("paper/tables/best_runtime.tex", findings=True),
        Output("paper/tables/roofline.tex", lambda c, s: "gemm" in s, extended=True),
        Output("paper/tables/ceiling_gap.tex", lambda c, s: ceiling_probe_runs(c)),
    ],
    "batching": [
        Output("paper/figures/batching.pdf"),
        Output("paper/tables/batching_verdicts.csv", findings=True),
        Output(
            "paper/tables/batch_operators.tex", lambda c, s: bool(operator_profile_settings(c)), extended=True
        ),
        Output(
            "paper/tables/torch_batch_operators.tex",
            lambda c, s: bool(torch_profile_runtimes(c)),
            extended=True,
        ),
        Output("paper/tables/batch_threads.tex", lambda c, s: runs_thread_probe(c), extended=True),
    ],
    "concurrency": [
        Output("paper/figures/concurrency.pdf"),
        Output("paper/tables/concurrency_verdicts.csv", findings=True),
    ],
    "decomposition": [
        Output("paper/tables/decomposition_gap.tex", extended=True),
        Output("paper/tables/fidelity.tex", extended=True),
        Output("paper/tables/ort_operators.tex", extended=True),
        Output("paper/figures/decomposition_gap.pdf", extended=True),
    ],
}
# Outputs of no study: the int8 sweep puts settings through the fidelity gate, untimed.
UNTIMED_OUTPUTS = [Output("paper/tables/int8_sweep.tex", lambda c, s: int8_sweep_runs(c), extended=True)]


def outputs(config: dict, studies: set[str]) -> list[Output]:
    """Every enabled study's own table (LaTeX and csv) and its other outputs where they apply."""
    found = []
    for study in sorted(studies):
        extended = study in EXTENDED_STUDIES
        found += [
            Output(f"paper/tables/{study}.tex", extended=extended),
            Output(f"paper/tables/{study}.csv", findings=study in FINDINGS_STUDIES, extended=extended),
            *(o for o in OUTPUTS.get(study, []) if o.when(config, studies)),
        ]
    return found + [o for o in UNTIMED_OUTPUTS if o.when(config, studies)]


def output_paths(config: dict, studies: set[str], extended_only: bool = False) -> list[str]:
    """The paths of those outputs (the extended tier's own only, if asked)."""
    return [o.path for o in outputs(config, studies) if o.extended or not extended_only]


def findings_tables(config: dict, studies: set[str]) -> list[str]:
    """The tables whose verdicts the findings page words (their csv)."""
    return [o.csv() for o in outputs(config, studies) if o.findings]
