"""One engine process of the concurrency scenario's independent_processes mode.

    python -m rmbench.studies.worker   (stdin: one JSON line {runtime, args, pairs, warmup_rows})

Loads the runtime, scores the warm-up rows, prints "ready", waits for a line on stdin ("go"),
scores every pair alone, timing each, and prints one JSON line: scores, latencies_ms, wall_s.
It exits when its stdin closes (its launch is gone), so it never outlives the launch.
"""

import json
import sys
import time

from rmbench.runtimes import runtime_class


def main() -> None:
    spec = json.loads(sys.stdin.readline())
    runtime = runtime_class(spec["runtime"])(**spec["args"])
    runtime.load()
    pairs = [tuple(p) for p in spec["pairs"]]
    for pair in pairs[: spec["warmup_rows"]]:
        runtime.score([pair])
    print("ready", flush=True)
    if not sys.stdin.readline():
        sys.exit("stdin closed before the go line")
    scores, latencies = [], []
    start = time.perf_counter()
    for pair in pairs:
        t = time.perf_counter()
        scores.append(float(runtime.score([pair])[0]))
        latencies.append((time.perf_counter() - t) * 1e3)
    wall_s = time.perf_counter() - start
    runtime.close()
    print(json.dumps({"scores": scores, "latencies_ms": latencies, "wall_s": wall_s}), flush=True)


if __name__ == "__main__":
    main()
