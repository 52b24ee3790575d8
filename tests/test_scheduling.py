"""The scheduler fix: one pending reevaluation timer, not one per scheduling pass."""

import threading
import time

from rmbench.plan.scheduling import one_pending_timer


class PassCounter:
    """Snakemake's scheduler as far as its rate limiter goes: a pass per semaphore release."""

    def __init__(self):
        self._open_jobs = threading.Semaphore(0)

    def _schedule_reevalutation(self, delay) -> None:  # Snakemake's own version, and spelling
        threading.Timer(delay, lambda: self._open_jobs.release()).start()

    def passes_after(self, calls: int, delay: float = 0.3) -> int:
        for _ in range(calls):
            self._schedule_reevalutation(delay)
        time.sleep(delay + 0.5)
        passes = 0
        while self._open_jobs.acquire(blocking=False):
            passes += 1
        return passes


def test_one_timer_is_pending_however_many_passes_ask_for_one():
    class Unpatched(PassCounter):
        pass

    class Patched(PassCounter):
        pass

    assert Unpatched().passes_after(20) == 20  # the pile-up the fix removes
    assert one_pending_timer(Patched)
    scheduler = Patched()
    assert scheduler.passes_after(20) == 1
    assert scheduler._pending_reevaluation.daemon  # a timer left at exit does not hold the process
    assert scheduler.passes_after(3) == 1  # the next timer starts once the last one has fired
    assert one_pending_timer(Patched)  # applying it twice changes nothing
    assert Patched().passes_after(5) == 1


def test_snakemake_has_the_method_the_fix_replaces():
    from snakemake.scheduling.job_scheduler import JobScheduler

    assert one_pending_timer()
    assert getattr(JobScheduler._schedule_reevalutation, "one_pending_timer", False)


def test_another_scheduler_is_left_alone():
    class Other:
        pass

    assert not one_pending_timer(Other)
    assert not hasattr(Other, "_schedule_reevalutation")
