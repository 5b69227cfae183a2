"""The training probe's distributed phase, run again and again, each time in a fresh process
as the probe runs it, counting the runs whose ranks die after measuring.

Before its ranks left with os._exit (benchmarks/probes/training_ddp.rank_main), torch's
teardown at interpreter exit aborted about one run in forty here ("terminate called without
an active exception", SIGABRT, after both ranks had destroyed their process group).

    .venv/bin/python -m perf.rank_exits 160     # prints each run, then "aborted 0 of 160"
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from lab.procs import REPO

CONFIG = {"world_size": 2, "model_mib": 2, "training_model": "mlp", "train_steps": 3,
          "batch": 16, "allreduce_max_mib": 2, "repetitions": 3, "nvml_period_s": 0.1,
          "dataloader_samples": 64, "timeout_s": 120, "seed": 0}
CODE = ("import json, sys; from benchmarks.probes.training import launch_ranks; "
        "launch_ranks(json.loads(sys.argv[1]))")


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    aborted = 0
    for i in range(runs):
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-c", CODE, json.dumps(CONFIG)], cwd=REPO,
                              capture_output=True, text=True, timeout=300, check=False)
        failed = done.returncode != 0 or "terminate called" in done.stderr
        aborted += failed
        print(f"{i}: exit {done.returncode} in {time.monotonic() - started:.1f} s"
              + (f"\n{done.stderr[-2000:]}" if failed else ""), flush=True)
    print(f"aborted {aborted} of {runs}")
    return 1 if aborted else 0


if __name__ == "__main__":
    sys.exit(main())
