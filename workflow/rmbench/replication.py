"""Does each verdict of the headline set hold on the replication sets and the other model?

A verdict (faster / slower / not distinguishable, by non-overlapping CIs) is reproduced when
every replication set gives the same one; a conclusion that flips is kept, flagged and
annotated with which set or model disagreed and the launch counts behind each verdict.
"""

from __future__ import annotations

import pandas as pd

from .provenance import host_cell, launch_hosts

COMPARED = ["metric", "candidate", "baseline"]


def replication_table(
    comparisons: pd.DataFrame, headline_set: str, keys: tuple[str, ...] = ("device",)
) -> pd.DataFrame:
    """One row per model x comparison on the headline set: its verdict, the verdict on every
    other set that ran the same pair, and whether the other models agree on the headline set.
    `keys`: what else a comparison is within besides model and set (e.g. the runtime, when a
    study compares variants)."""
    KEYS = [*keys, *COMPARED]
    rows = []
    for (model, *key), group in comparisons.groupby(["model", *KEYS], sort=True):
        by_set = group.set_index("set")
        if headline_set not in by_set.index:
            continue
        headline = by_set.loc[headline_set]
        row = dict(zip(["model", *KEYS], [model, *key])) | {
            "headline_set": headline_set,
            "verdict": headline["verdict"],
            "speedup": headline["speedup"],
            "launches": f"{headline['n_candidate']}+{headline['n_baseline']}",
        }
        others = by_set.drop(index=headline_set)
        row["replications"] = "; ".join(
            f"{s}: {r['verdict']} ({r['speedup']:.2f}x, {r['n_candidate']}+{r['n_baseline']} launches)"
            for s, r in others.iterrows()
        )
        disagree = [s for s, r in others.iterrows() if r["verdict"] != headline["verdict"]]
        same_pair = comparisons[
            (comparisons["set"] == headline_set)
            & (comparisons["model"] != model)
            & (comparisons[KEYS] == pd.Series(dict(zip(KEYS, key)))).all(axis=1)
        ]
        disagree += [
            f"model {r['model']}" for _, r in same_pair.iterrows() if r["verdict"] != headline["verdict"]
        ]
        row["checked_on"] = len(others) + len(same_pair)
        # a verdict checked on another kind of machine tests the machine as well as the claim
        hosts = launch_hosts(pd.concat([group, same_pair]))
        row["host"] = host_cell(hosts)
        row["across_hosts"] = len(hosts) > 1
        row["reproduced"] = "not checked" if row["checked_on"] == 0 else ("no" if disagree else "yes")
        row["disagreeing"] = ", ".join(disagree)
        rows.append(row)
    return pd.DataFrame(rows)
