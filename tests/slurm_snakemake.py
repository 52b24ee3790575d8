"""Snakemake whose SLURM executor checks its jobs every second: the test cluster's jobs take
seconds, and the plugin's back-off (10 s more for each check that finds none finished) would
leave it idle most of the time. For tests/test_slurm.py only; a real cluster keeps the back-off."""

import sys

import snakemake_executor_plugin_slurm as slurm
from snakemake.cli import main

slurm.Executor.next_seconds_between_status_checks = property(lambda self: 1, lambda self, seconds: None)
sys.exit(main())
