"""A fix for Snakemake's scheduler that keeps it from taking a core away from the launches.

Snakemake's job rate limiter (`--max-jobs-per-timespan`, on by default at 100/1s) ends every
scheduling pass that finds jobs waiting by starting a timer; the timer starts another pass when it
fires. Each finished job also starts a pass, so the passes pile up: after a few hundred jobs, a
few hundred timers fire every second. Each pass stats the inputs of every waiting job. In our runs
most launches wait their turn, so Snakemake's own process ends up using half a core. On a 2-core
host that is half a core taken from the launch being timed.

`one_pending_timer()` keeps at most one such timer alive. Passes still come at least once per
timespan and after every job event, which is all the rate limiter needs.
"""

import threading


def one_pending_timer(scheduler_class=None) -> bool:
    """Makes the scheduler (Snakemake's JobScheduler unless given) start a reevaluation timer
    only when none is pending. Returns False, changing nothing, in a Snakemake without that
    method."""
    if scheduler_class is None:
        try:
            from snakemake.scheduling.job_scheduler import JobScheduler as scheduler_class
        except ImportError:
            return False
    original = getattr(scheduler_class, "_schedule_reevalutation", None)  # Snakemake's spelling
    if original is None or getattr(original, "one_pending_timer", False):
        return original is not None

    def schedule_reevaluation(self, delay) -> None:
        pending = getattr(self, "_pending_reevaluation", None)
        if pending is not None and pending.is_alive():
            return  # it will start a pass: another timer would only add passes
        timer = threading.Timer(delay, self._open_jobs.release)
        timer.daemon = True  # a timer left at the end must not hold the process open
        self._pending_reevaluation = timer
        timer.start()

    schedule_reevaluation.one_pending_timer = True
    scheduler_class._schedule_reevalutation = schedule_reevaluation
    return True
