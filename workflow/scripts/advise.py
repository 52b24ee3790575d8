"""The advise target: rmbench.studies.advise on the model the config names (rm=...)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.studies.advise import main

if not snakemake.params.rm:
    raise SystemExit("advise: name the model: --config rm=<model folder or hub id>")
# Progress goes to the terminal (the comparison takes minutes); the log keeps the same lines.
with open(snakemake.log[0], "w") as log:
    arguments = [snakemake.params.rm, "--rows", snakemake.input.rows, "--binary", snakemake.input.binary]
    main([*arguments, *snakemake.params.budget], log=log)
