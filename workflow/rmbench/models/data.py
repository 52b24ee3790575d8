"""Data sources (hub, local, synthetic), the prompt/response split, and seeded sampling.

Every source yields hh-rlhf rows: {"chosen": str, "rejected": str}, each a dialogue of
"\n\nHuman: ..." / "\n\nAssistant: ..." turns. A row is scored the way the OpenAssistant model
cards call their models: tokenizer(prompt, response), where the prompt is the dialogue up to
and including the last "\n\nAssistant:" and the response is that final reply.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rmbench.errors import DataSourceError
from rmbench.models.synthetic import generate_split

ASSISTANT_MARKER = "\n\nAssistant:"


def split_dialogue(dialogue: str) -> tuple[str, str]:
    """Splits an hh-rlhf dialogue into (prompt, final reply)."""
    cut = dialogue.rfind(ASSISTANT_MARKER)
    if cut < 0:
        raise ValueError("dialogue has no '\\n\\nAssistant:' turn")
    cut += len(ASSISTANT_MARKER)
    return dialogue[:cut], dialogue[cut:].strip()


def _check_row(row, where: str) -> dict:
    if not isinstance(row, dict):
        raise DataSourceError(f"{where}: expected a JSON object with 'chosen' and 'rejected'")
    for key in ("chosen", "rejected"):
        if not isinstance(row.get(key), str):
            raise DataSourceError(f"{where}: field '{key}' is missing or not a string")
        if ASSISTANT_MARKER not in row[key]:
            raise DataSourceError(f"{where}: field '{key}' has no '\\n\\nAssistant:' turn")
    return {"chosen": row["chosen"], "rejected": row["rejected"]}


def read_jsonl(path: str | Path) -> list[dict]:
    """Reads a JSONL file; a malformed line stops with the file and line number."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise DataSourceError(f"{path}:{lineno}: malformed JSON ({e.msg})") from None
    return rows


def write_jsonl(rows: list[dict], path: str | Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def load_local(path: str | Path) -> list[dict]:
    """hh-rlhf rows from a local JSONL or parquet file with columns 'chosen' and 'rejected'."""
    path = Path(path)
    if not path.exists():
        raise DataSourceError(f"data.local_path {path} does not exist")
    if path.suffix == ".parquet":
        import pandas as pd

        raw = pd.read_parquet(path).to_dict("records")
        return [_check_row(r, f"{path}: row {i + 1}") for i, r in enumerate(raw)]
    raw = read_jsonl(path)
    return [_check_row(r, f"{path}:{i + 1}") for i, r in enumerate(raw)]


def load_hub(hub_id: str, split: str) -> list[dict]:
    """hh-rlhf rows from the Hugging Face hub (or its local cache)."""
    try:
        import datasets

        ds = datasets.load_dataset(hub_id, split=split)
    except Exception as e:  # noqa: BLE001 - any failure to reach the hub gets the same advice
        raise DataSourceError(
            f"could not load {hub_id} (split '{split}') from the Hugging Face hub or its cache: "
            f"{type(e).__name__}: {e}. Without hub access, set data.source to 'local' (with "
            "data.local_path pointing to an hh-rlhf JSONL or parquet file) or to 'synthetic'."
        ) from None
    return [_check_row(r, f"{hub_id}[{split}] row {i}") for i, r in enumerate(ds)]


def load_source(data_cfg: dict) -> list[dict]:
    """The whole split named by the config's data section, as hh-rlhf rows."""
    source = data_cfg["source"]
    if source == "synthetic":
        return generate_split(data_cfg["synthetic_seed"], data_cfg["synthetic_rows"])
    if source == "hub":
        return load_hub(data_cfg["hub_id"], data_cfg["split"])
    if source == "local":
        return load_local(data_cfg["local_path"])
    raise DataSourceError(f"unknown data.source '{source}' (hub | local | synthetic)")


def sample_rows(split: list[dict], size: int, seed: int, id_prefix: str) -> list[dict]:
    """Draws `size` rows without replacement with a fixed seed, in draw order.

    Draw order is kept because it is the arrival order that naive batching sees.
    """
    if size > len(split):
        raise DataSourceError(f"cannot draw {size} rows from a split of {len(split)}")
    index = np.random.default_rng(seed).choice(len(split), size=size, replace=False)
    rows = []
    for i in index:
        prompt, response = split_dialogue(split[i]["chosen"])
        _, rejected = split_dialogue(split[i]["rejected"])
        rows.append(
            {"id": f"{id_prefix}-{int(i):05d}", "prompt": prompt, "response": response, "rejected": rejected}
        )
    return rows


def load_set(path: str | Path) -> list[dict]:
    """A sample set written by the sample_set rule."""
    rows = read_jsonl(path)
    for i, row in enumerate(rows, start=1):
        for key in ("id", "prompt", "response"):
            if not isinstance(row.get(key), str):
                raise DataSourceError(f"{path}:{i}: field '{key}' is missing or not a string")
    return rows
