"""The cell table: every study x model x device x runtime x params x launch in the config.

One cell launch is one job, one fresh process and one file:
results/cells/<study>/<model>/<device>/<runtime>/<params>/launch~<i>.json
where <params> is key~value pairs joined by '+', e.g. set~main60.

The module also says what the config asks of one study and one launch: the study's baseline and
headline set, a runtime's options, a launch's settings.
"""

from __future__ import annotations

from rmbench.plan.studies import STUDIES

CELL_PATH = "results/cells/{study}/{model}/{device}/{runtime}/{params}/launch~{launch}.json"


def format_params(params: dict) -> str:
    for k, v in params.items():
        if any(c in f"{k}{v}" for c in "+~/"):
            raise ValueError(f"parameter {k}={v} may not contain '+', '~' or '/'")
    return "+".join(f"{k}~{v}" for k, v in params.items())


def parse_params(text: str) -> dict:
    params = {}
    for part in text.split("+"):
        key, sep, value = part.partition("~")
        if not sep:
            raise ValueError(f"malformed cell parameters '{text}' (expected key~value+key~value)")
        params[key] = value
    return params


def step_name(runtime: str, params: dict) -> str:
    """A runtime and its variant as one name: 'ort_python graph=basic' (the decomposition's steps)."""
    return " ".join([runtime, *(f"{k}={v}" for k, v in params.items() if k != "set")])


def study_groups(study: dict) -> list[tuple[str, list[str], list[str], list[str], dict, dict]]:
    """(runtime, models, sets, devices, launch counts, launch caps) for one study: every runtime on
    the study's sets and models (those of them it names, if it names some), then the
    replication's runtimes on the replication's sets, devices, models and counts."""
    groups = [
        (
            runtime,
            cfg.get("models") or study["models"],
            study["sets"],
            cfg.get("devices") or study["devices"],
            cfg["launches"],
            cfg.get("cap") or {},
        )
        for runtime, cfg in study["runtimes"].items()
    ]
    replicate = study.get("replicate")
    if replicate:
        launches = {"cpu": 3, "cuda": 5} | (replicate.get("launches") or {})
        devices = [d for d in study["devices"] if d in replicate.get("devices", study["devices"])]
        cap = replicate.get("cap") or {}
        for runtime in replicate["runtimes"]:
            models = study["runtimes"][runtime].get("models") or study["models"]
            models = [m for m in models if m in replicate.get("models", models)]
            groups.append((runtime, models, replicate["sets"], devices, launches, cap))
    return groups


def runtime_variants(study: dict, runtime: str, device: str) -> list[dict]:
    """The variants a runtime runs on a device: its own where it has them (a service has no
    independent engines; a GPU visit runs a few), per device where given as {device: [...]},
    else the study's."""
    own = study["runtimes"].get(runtime, {}).get("variants")
    if isinstance(own, dict):
        own = own.get(device)
    return own or study.get("variants") or [{}]


def study_cells(name: str, study: dict) -> list[dict]:
    """model x device x runtime x set x variant x launch for one study, every launch up to the
    cell's cap; `minimum` is the launches it always runs (the rest run while its block's
    comparisons stay undecided, see rmbench.stats.sequential).

    A variant is a dict of extra parameters (e.g. zero_copy~off) that ends up in <params>.
    """
    cells = []
    for model in study["models"]:
        for runtime, models, sets, devices, launches, caps in study_groups(study):
            if model not in models:
                continue
            for device in devices:
                minimum = launches[device]
                cap = max(minimum, caps.get(device, minimum))
                for set_name in sets:
                    for variant in runtime_variants(study, runtime, device):
                        params = format_params({"set": set_name} | variant)
                        for launch in range(1, cap + 1):
                            cells.append(
                                {
                                    "study": name,
                                    "model": model,
                                    "device": device,
                                    "runtime": runtime,
                                    "params": params,
                                    "launch": launch,
                                    "minimum": minimum,
                                    "cap": cap,
                                }
                            )
    return cells


def comparison_block(cell: dict) -> tuple[str, str, str, str]:
    """The launches a table compares with each other: one study's cells of one model on one device
    and one sample set (every runtime, variant and launch)."""
    return cell["study"], cell["model"], cell["device"], parse_params(cell["params"])["set"]


def launch_priorities(cells: list[dict], seed: int) -> dict[str, int]:
    """Scheduling priority per result path: blocks run one after another, runtimes take turns
    within a block.

    A block (comparison_block) holds the launches that are compared with each other; blocks run
    in the order of the cell table, so that a block's launches are minutes apart rather than
    spread over the hours of the whole run, where a shared machine's drift would widen every
    interval. Within a block, round-robin: every cell's launch 1 comes before any launch 2, and
    within a round the cells take a seeded random order, so slow drift favours no runtime. Higher
    runs first; the order actually run is recorded in each launch's start time.
    """
    import random

    rng = random.Random(seed)
    blocks: dict[tuple, dict[int, list[str]]] = {}
    for cell in cells:
        rounds = blocks.setdefault(comparison_block(cell), {})
        rounds.setdefault(cell["launch"], []).append(cell["path"])
    order = []
    for rounds in blocks.values():
        for launch in sorted(rounds):
            paths = sorted(rounds[launch])
            rng.shuffle(paths)
            order += paths
    return {path: len(order) - i for i, path in enumerate(order)}


def drop_removed_runtimes(config: dict) -> dict:
    """The config without the runtimes an overlay set to null: a profile removes a runtime its
    base config lists (`torch_compile: null`) as config files merge key by key. In place."""
    for study in config.get("studies", {}).values():
        runtimes = study.get("runtimes") or {}
        for runtime in [r for r, cfg in runtimes.items() if cfg is None]:
            del runtimes[runtime]
    return config


def cell_table(config: dict) -> list[dict]:
    """Every cell launch the config may ask for (up to each cell's cap), each with its result path."""
    cells = []
    for name, study in config["studies"].items():
        if study.get("enabled", True):
            cells += study_cells(name, study)
    for cell in cells:
        cell["path"] = CELL_PATH.format(**cell)
    return cells


def check_references(config: dict) -> None:
    """Stops with a clear message when a study or the quantization sweep names a set or model the
    config lacks."""
    from rmbench.errors import RmbenchError

    named = {f"studies.{study}": cfg for study, cfg in config["studies"].items()}
    if sweep := config.get("quantization_sweep"):
        named["quantization_sweep"] = {"sets": [sweep["set"]], "models": sweep["models"]}
    named["fidelity"] = {"sets": (config.get("fidelity") or {}).get("sets", [])}
    for where, cfg in named.items():
        for kind in ("sets", "models"):
            names = cfg.get(kind, []) + (cfg.get("replicate") or {}).get(kind, [])
            missing = [name for name in names if name not in config[kind]]
            if missing:
                raise RmbenchError(
                    f"{where}.{kind} names {', '.join(missing)}, which config '{kind}' "
                    f"does not define (defined: {', '.join(config[kind])})"
                )
    for study, cfg in config["studies"].items():
        for runtime, runtime_cfg in cfg["runtimes"].items():
            unknown = set(runtime_cfg.get("models") or []) - set(config["models"])
            if unknown:
                raise RmbenchError(
                    f"studies.{study}.runtimes.{runtime}.models names {', '.join(sorted(unknown))}, "
                    f"which config 'models' does not define (defined: {', '.join(config['models'])})"
                )
        unknown = set((cfg.get("replicate") or {}).get("runtimes", [])) - set(cfg["runtimes"])
        if unknown:
            raise RmbenchError(
                f"studies.{study}.replicate.runtimes names {', '.join(sorted(unknown))}, which "
                f"studies.{study}.runtimes does not configure"
            )


# What a config asks of one study and one cell. Functions of the validated config alone, so that
# the rules (workflow/rules/common.smk) and the tests ask the same questions.


def study_config(config: dict, study: str) -> dict:
    """A study's settings; {} where the config leaves it out (a study of the extended tier)."""
    return config["studies"].get(study, {})


def study_baseline(config: dict, study: str) -> str | None:
    """What a study's speed-ups are against: its configured baseline, else its first runtime or
    variant (a study compared between steps: its first runtime's first variant)."""
    cfg = study_config(config, study)
    if not cfg:  # a study this config leaves out: no rule of it runs
        return None
    if STUDIES[study]["between"] == "variant":
        return format_params(cfg["variants"][0])
    if STUDIES[study]["between"] == "step":
        runtime = next(iter(cfg["runtimes"]))
        return step_name(runtime, runtime_variants(cfg, runtime, cfg["devices"][0])[0])
    return cfg.get("baseline") or next(iter(cfg["runtimes"]))


def headline_set(config: dict, study: str) -> str:
    """The set a study's tables and paper numbers lead with: its first (else the config's first)."""
    return study_config(config, study).get("sets", list(config["sets"]))[0]


def runtime_options(config: dict, study: str, runtime: str, params: str = "") -> dict:
    """A runtime's options in a study as the config gives them, with a cell's parameters (its
    variant, e.g. optimizer~transformers) over them where given."""
    options = study_config(config, study).get("runtimes", {}).get(runtime, {}).get("options", {})
    return options | (parse_params(params) if params else {})


def precision(params: str) -> str:
    """A cell's numeric precision (fp32 unless its variant names another)."""
    return parse_params(params).get("precision", "fp32")


def gated_params(config: dict, params: str) -> list[str]:
    """A reduced-precision cell's fidelity gates: on its own set, and untimed on each of
    `fidelity.sets`."""
    cell = parse_params(params)
    extra = [s for s in config["fidelity"]["sets"] if s != cell["set"]]
    return [params, *(format_params(cell | {"set": s}) for s in extra)]


def cell_settings(config: dict, cell: dict, threads: int, unsupported: str | None) -> dict:
    """What a launch needs besides its inputs; keys appear only where its study uses them.
    `unsupported`: why its runtime cannot score its model's family (then it is recorded, untimed)."""
    study = config["studies"][cell["study"]]
    settings = {
        "threads": threads,
        "warmup_rows": config["launch"]["warmup_rows"],
        "timeout_s": config["launch"]["timeout_s"],
        "max_length": config["data"]["max_length"],
        "tolerance": config["parity"]["gpu_tolerance" if cell["device"] == "cuda" else "tolerance"],
        "repeat": study.get("repeat", 1),
    }
    if precision(cell["params"]) != "fp32":  # against its own gated scores (see rule fidelity)
        settings["tolerance"] = config["fidelity"]["launch_tolerance"]
    if options := study["runtimes"][cell["runtime"]].get("options"):
        settings["options"] = options
    for key in ("rows", "tokens", "ceiling_probe"):
        if key in study:
            settings[key] = study[key]
    if cell["study"] == "colocation":  # the rollout generator runs beside the scorer
        settings["generator"] = study["generator"] | {"model_dir": "results/generator"}
    if unsupported:
        settings["unsupported"] = unsupported
    return settings
