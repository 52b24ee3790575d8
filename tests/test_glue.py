"""The glue every script shares: a job's output goes to its log, and the terminal comes back."""

import subprocess
import sys

from conftest import ROOT

JOB = """
import sys
sys.path.insert(0, sys.argv[1])
from rmbench.plan.glue import logged
with logged(sys.argv[2]):
    print("inside the job")
print("the look's line")
"""


def test_a_job_prints_into_its_log_and_on_the_terminal_after_it(tmp_path):
    log = tmp_path / "job.log"
    run = subprocess.run(
        [sys.executable, "-c", JOB, str(ROOT / "workflow"), str(log)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert log.read_text() == "inside the job\n"
    assert run.stdout == "the look's line\n"
