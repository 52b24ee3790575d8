"""Does each verdict of the headline set hold on the replication sets and the other model?

A verdict (faster / slower / not distinguishable, by non-overlapping CIs) is reproduced when
every replication gives the same one. It is contradicted ("no") when one gives the opposite
direction, and not confirmed when one differs otherwise: a difference on one side, "not
distinguishable" on the other. Replications run few launches, so a difference they miss is more
often a lack of power than a wrong claim; the two outcomes are kept apart for that reason. A
conclusion that does not reproduce is kept, flagged and annotated with which set or model
differed and the launch counts behind each verdict.
"""

from __future__ import annotations

import pandas as pd

from rmbench.probes.provenance import host_cell, launch_hosts

COMPARED = ["metric", "candidate", "baseline"]
OPPOSITE = {"faster": "slower", "slower": "faster"}
# What the replications of one verdict show, from the strongest disagreement down.
OUTCOMES = ("no", "not confirmed", "yes")


def replication_outcome(headline: str, replications: list[str]) -> str:
    """yes: every replication gives the headline's verdict; no: one gives the opposite
    direction; not confirmed: one differs otherwise."""
    if not replications:
        return "not checked"
    if OPPOSITE.get(headline) in replications:
        return "no"
    return "yes" if set(replications) == {headline} else "not confirmed"


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
        same_pair = comparisons[
            (comparisons["set"] == headline_set)
            & (comparisons["model"] != model)
            & (comparisons[KEYS] == pd.Series(dict(zip(KEYS, key)))).all(axis=1)
        ]
        checks = {s: r["verdict"] for s, r in others.iterrows()}
        checks |= {f"model {r['model']}": r["verdict"] for _, r in same_pair.iterrows()}
        disagree = [name for name, verdict in checks.items() if verdict != headline["verdict"]]
        row["checked_on"] = len(checks)
        # a verdict checked on another kind of machine tests the machine as well as the claim
        hosts = launch_hosts(pd.concat([group, same_pair]))
        row["host"] = host_cell(hosts)
        row["across_hosts"] = len(hosts) > 1
        row["reproduced"] = replication_outcome(headline["verdict"], list(checks.values()))
        row["disagreeing"] = ", ".join(disagree)
        rows.append(row)
    return pd.DataFrame(rows)
