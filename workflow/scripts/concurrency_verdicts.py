"""The concurrency verdicts as a machine-readable list: each mode and client count against one
client on a shared engine (per runtime), and each service against the shared engines."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
import pandas as pd
from rmbench.plan.glue import logged, read_table
from rmbench.report.tables import service_verdicts, verdict_list
from rmbench.runtimes import service_baselines
from rmbench.stats.across_launches import Checks

with logged(snakemake.log[0]):
    within = verdict_list(read_table(snakemake.input.comparisons), snakemake.params.baseline, "row_ms")
    launches = read_table(snakemake.input.launches)
    launches["variant"] = launches["variant"].astype(str)
    across = service_verdicts(launches, "row_ms", Checks(**snakemake.params.checks), service_baselines())
    table = pd.concat([within.assign(kind="vs one client"), across.assign(kind="service vs engine")])
    table.to_csv(snakemake.output[0], index=False)
    print("\n".join(table["statement"]))
