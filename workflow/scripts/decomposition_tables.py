"""The decomposition study's derived outputs: the eager -> ORT gap by step, the fidelity table of
every reduced-precision variant, ORT's time by operator type, and the figures (p50 and achieved
GFLOP/s per step vs the ceiling; each path from eager as a waterfall)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged, read_json, read_table
from rmbench.probes.operators import operator_table
from rmbench.probes.roofline import ceilings, in_launch_fractions
from rmbench.report.figures import decomposition_figure, gap_figure
from rmbench.report.latex import fidelity_latex, gap_latex, operator_latex
from rmbench.report.tables import with_record_hosts
from rmbench.studies.decomposition import fidelity_table, gap_table

with logged(snakemake.log[0]):
    inp, out, par = snakemake.input, snakemake.output, snakemake.params
    best = ceilings(read_table(inp.gemm)) if inp.get("gemm") else {}
    summary = read_table(inp.summary)
    launches = read_table(inp.launches)
    probed = in_launch_fractions(launches[launches["set"] == par.headline_set], ["model", "step"])
    gap = gap_table(summary[summary["set"] == par.headline_set], par.baseline, best, probed)
    gap.to_csv(out.gap_csv, index=False)
    with open(out.gap_tex, "w") as f:
        f.write(gap_latex(gap, par.headline_set))
    gap_figure(gap, par.headline_set, out.gap_pdf)
    fidelity = fidelity_table(
        [read_json(p) for p in inp.fidelity], read_table(inp.comparisons), par.headline_set
    )
    fidelity.to_csv(out.fidelity_csv, index=False)
    with open(out.fidelity_tex, "w") as f:
        f.write(fidelity_latex(fidelity, par.min_agreement))
    profiles = [read_json(path) for path in inp.get("operators", [])]
    operators = with_record_hosts(operator_table({p["model"]: p for p in profiles}), profiles)
    operators.to_csv(out.operators_csv, index=False)
    with open(out.operators_tex, "w") as f:
        f.write(operator_latex(operators))
    probed_ceiling = probed.groupby("model")["probed_ceiling_gflops"].mean().to_dict()
    decomposition_figure(read_table(inp.table), par.headline_set, out.pdf, best, probed_ceiling)
