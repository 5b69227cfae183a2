"""py-spy on the web tier while `make bench` loads it: where its CPU time goes.

``Profile(platform, "submission")`` starts ``py-spy record`` on gunicorn's master and its
workers (sampling without pausing them); ``done()`` waits for it and prints the functions
that held the most samples, by themselves (self) and with what they called (ours: the
platform's own modules). The raw stacks are kept in perf/results/profile-NAME.txt.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
OURS = re.compile(r"\((?:api|jobs|fleet|board|web|leaderboard|certification|config|contract)/[^)]*\)")


def py_spy() -> str | None:
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


class Profile:
    def __init__(self, master_pid: int, name: str, seconds: float) -> None:
        self.name = name
        self.out = RESULTS / f"profile-{name}.txt"
        spy = py_spy()
        self.proc: subprocess.Popen[bytes] | None = None
        if spy is None:
            print(f"profile {name}: skipped (py-spy is not installed: pip install py-spy)")
            return
        RESULTS.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [spy, "record", "-p", str(master_pid), "--subprocesses", "--nonblocking",
             "-d", str(max(1, int(seconds))), "-r", "200", "-f", "raw", "-o", str(self.out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    @classmethod
    def command(cls, argv: list[str], env: dict[str, str], cwd: Path, name: str) -> str:
        """Run ``argv`` under py-spy (or plainly without it); its stdout, with the profile's
        summary printed as for a web tier's."""
        spy = py_spy()
        if spy is None:
            return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True,
                                  check=True).stdout
        RESULTS.mkdir(parents=True, exist_ok=True)
        out = RESULTS / f"profile-{name}.txt"
        done = subprocess.run([spy, "record", "-r", "200", "-f", "raw", "-o", str(out), "--",
                               *argv], env=env, cwd=cwd, capture_output=True, text=True,
                              check=True)
        for kind, rows in summarise(out.read_text(), 8).items():
            print(f"profile {name}, {kind}: " + "; ".join(f"{share:.0%} {frame}"
                                                          for frame, share in rows))
        return done.stdout

    def done(self, top: int = 8) -> dict[str, list[tuple[str, float]]]:
        if self.proc is None:
            return {}
        _, err = self.proc.communicate(timeout=120)
        if self.proc.returncode != 0 or not self.out.exists():
            print(f"profile {self.name}: py-spy failed ({err.decode()[-300:].strip()})")
            return {}
        summary = summarise(self.out.read_text(), top)
        for kind, rows in summary.items():
            print(f"profile {self.name}, {kind}: " + "; ".join(f"{share:.0%} {frame}"
                                                             for frame, share in rows))
        return summary


def summarise(raw: str, top: int) -> dict[str, list[tuple[str, float]]]:
    """Shares of all samples: by leaf frame (self), and by each of our frames on the stack."""
    own: Counter[str] = Counter()
    ours: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        own[_short(frames[-1])] += n
        for frame in {_short(f) for f in frames if OURS.search(f)}:
            ours[frame] += n
    if not total:
        return {}
    return {"self": [(f, n / total) for f, n in own.most_common(top)],
            "ours (inclusive)": [(f, n / total) for f, n in ours.most_common(top)]}


def _short(frame: str) -> str:
    # "claim (jobs/services/lifecycle.py:120)" -> "claim (jobs/services/lifecycle.py)"
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    if "site-packages/" in path:
        path = path.split("site-packages/", 1)[1]
    return f"{name} ({path})"
