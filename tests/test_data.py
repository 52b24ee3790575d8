import json

import pytest
from rmbench.errors import DataSourceError
from rmbench.models.data import load_hub, load_local, load_set, read_jsonl, sample_rows, split_dialogue
from rmbench.models.synthetic import generate_split

DIALOGUE = "\n\nHuman: Hi there.\n\nAssistant: Hello!\n\nHuman: How do I boil an egg?\n\nAssistant: Put it in boiling water."


def test_split_keeps_the_last_assistant_marker_in_the_prompt():
    prompt, response = split_dialogue(DIALOGUE)
    assert prompt == "\n\nHuman: Hi there.\n\nAssistant: Hello!\n\nHuman: How do I boil an egg?\n\nAssistant:"
    assert response == "Put it in boiling water."


def test_split_without_assistant_turn_fails():
    with pytest.raises(ValueError):
        split_dialogue("\n\nHuman: hello")


def test_corrupt_jsonl_names_file_and_line(tmp_path):
    path = tmp_path / "hh.jsonl"
    good = json.dumps({"chosen": DIALOGUE, "rejected": DIALOGUE})
    path.write_text(good + "\n" + good + "\n{not json\n")
    with pytest.raises(DataSourceError, match=r"hh\.jsonl:3: malformed JSON"):
        load_local(path)


def test_row_missing_a_field_names_file_and_line(tmp_path):
    path = tmp_path / "hh.jsonl"
    path.write_text(
        json.dumps({"chosen": DIALOGUE, "rejected": DIALOGUE})
        + "\n"
        + json.dumps({"chosen": DIALOGUE})
        + "\n"
    )
    with pytest.raises(DataSourceError, match=r"hh\.jsonl:2: field 'rejected'"):
        load_local(path)


def test_local_parquet_and_missing_file(tmp_path):
    import pandas as pd

    pd.DataFrame([{"chosen": DIALOGUE, "rejected": DIALOGUE}] * 3).to_parquet(tmp_path / "hh.parquet")
    assert len(load_local(tmp_path / "hh.parquet")) == 3
    with pytest.raises(DataSourceError, match="does not exist"):
        load_local(tmp_path / "nowhere.jsonl")


def test_unreachable_hub_names_the_alternatives(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache
    with pytest.raises(DataSourceError) as e:
        load_hub("Anthropic/hh-rlhf", "test")
    assert "'local'" in str(e.value) and "'synthetic'" in str(e.value)


def test_sampling_is_seeded_without_replacement():
    split = generate_split(3, 300)
    a, b = sample_rows(split, 60, 42, "s"), sample_rows(split, 60, 42, "s")
    assert a == b
    assert len({r["id"] for r in a}) == 60
    assert [r["id"] for r in sample_rows(split, 60, 43, "s")] != [r["id"] for r in a]
    with pytest.raises(DataSourceError, match="cannot draw"):
        sample_rows(split, 301, 1, "s")


def test_sample_set_roundtrip_and_bad_rows(tmp_path):
    from rmbench.models.data import write_jsonl

    rows = sample_rows(generate_split(3, 50), 5, 1, "s")
    write_jsonl(rows, tmp_path / "set.jsonl")
    assert load_set(tmp_path / "set.jsonl") == read_jsonl(tmp_path / "set.jsonl") == rows
    (tmp_path / "bad.jsonl").write_text(json.dumps({"id": "x", "prompt": 3, "response": "r"}) + "\n")
    with pytest.raises(DataSourceError, match=r"bad\.jsonl:1: field 'prompt'"):
        load_set(tmp_path / "bad.jsonl")
