"""The cell table: every study x model x device x runtime x params x launch in the config.

One cell launch is one job, one fresh process and one file:
results/cells/<study>/<model>/<device>/<runtime>/<params>/launch~<i>.json
where <params> is key~value pairs joined by '+', e.g. set~main60.
"""

from __future__ import annotations

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


def launch_count(runtime_cfg: dict, device: str) -> int:
    return runtime_cfg["launches"][device]


def study_cells(name: str, study: dict) -> list[dict]:
    """model x device x runtime x set x variant x launch for one study.

    A variant is a dict of extra parameters (e.g. zero_copy~off) that ends up in <params>.
    """
    cells = []
    for model in study["models"]:
        for device in study["devices"]:
            for runtime, runtime_cfg in study["runtimes"].items():
                for set_name in study["sets"]:
                    for variant in study.get("variants") or [{}]:
                        params = format_params({"set": set_name} | variant)
                        for launch in range(1, launch_count(runtime_cfg, device) + 1):
                            cells.append(
                                {
                                    "study": name,
                                    "model": model,
                                    "device": device,
                                    "runtime": runtime,
                                    "params": params,
                                    "launch": launch,
                                }
                            )
    return cells


def cell_table(config: dict) -> list[dict]:
    """Every cell launch the config asks for, each with its result path."""
    cells = []
    for name, study in config["studies"].items():
        if study.get("enabled", True):
            cells += study_cells(name, study)
    for cell in cells:
        cell["path"] = CELL_PATH.format(**cell)
    return cells


def check_references(config: dict) -> None:
    """Stops with a clear message when a study names a set or model the config lacks."""
    from .errors import RmbenchError

    for study, cfg in config["studies"].items():
        for kind in ("sets", "models"):
            missing = [name for name in cfg.get(kind, []) if name not in config[kind]]
            if missing:
                raise RmbenchError(
                    f"studies.{study}.{kind} names {', '.join(missing)}, which config '{kind}' "
                    f"does not define (defined: {', '.join(config[kind])})"
                )
