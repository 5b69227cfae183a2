"""`benchctl lab up --spec FILE|NAME` and `benchctl lab down`.

``up`` starts the platform, builds the lab from the spec, enrols a node worker in every
node host and starts the reference endpoints, prints what is where, and stays up until
Ctrl-C (which tears everything down). ``down`` removes what a crashed ``up`` left: it kills
the processes recorded in the state file and deletes every ``bl-`` namespace and link.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from lab import netlab
from lab.platform_stack import REPO, PlatformStack, say, stop_on_sigterm
from lab.stack import LabStack, describe
from workers.errors import CliError

VAR = REPO / "var" / "lab"
STATE = VAR / "state.json"
SPECS = Path(__file__).resolve().parent / "specs"


def spec_path(value: str) -> Path:
    """A spec file, or the name of one of the published specs (``tour``, ``demo``)."""
    path = Path(value)
    if path.is_file():
        return path
    published = SPECS / f"{value}.yaml"
    if published.is_file():
        return published
    names = ", ".join(sorted(p.stem for p in SPECS.glob("*.yaml")))
    raise CliError(f"no lab spec {value!r}: give a spec file or one of the published specs "
                   f"({names})")


def up(spec_path: Path) -> None:
    if os.geteuid() != 0:
        raise CliError("the lab needs root (ip netns, tc): run it as root")
    spec = netlab.load_spec(spec_path)
    VAR.mkdir(parents=True, exist_ok=True)
    stop_on_sigterm()
    platform = PlatformStack(VAR, "benchlab", state_file=STATE)
    lab = LabStack(netlab.NetLab(spec), VAR / spec.name, 0, 0)
    try:
        platform.start()
        providers = {h.provider: h.provider_kind for h in spec.nodes()}
        seed = json.loads(platform.manage("seed_demo", *[f"--provider={n}={k}"
                                                         for n, k in providers.items()]))
        lab.api_port = int(platform.api.rsplit(":", 1)[1])
        lab.redis_port = platform.redis_port
        lab.up()
        lab.enrol_nodes(platform.api, lambda name, kind: (seed["providers"][name]["id"],
                                                          seed["providers"][name]["token"]))
        lab.register_references(platform.register_endpoint)
        for proc in lab.started:
            platform.keep(proc)  # recorded for `lab down`
        for row in describe(lab):
            say(json.dumps(row))
        say(f"platform: {platform.api}  buyer token: {seed['buyer_token']}")
        for name, provider in seed["providers"].items():
            say(f"provider {name!r}: id {provider['id']}, owner's API token {provider['token']}")
        say("lab up; Ctrl-C tears it down")
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        lab.down()
        platform.stop()
        STATE.unlink(missing_ok=True)


def down() -> list[str]:
    removed = []
    if STATE.exists():
        for pid in json.loads(STATE.read_text()).get("pids", []):
            try:
                os.killpg(pid, signal.SIGKILL)
                removed.append(f"process group {pid}")
            except ProcessLookupError:
                pass
        STATE.unlink()
    removed += netlab.cleanup()
    return removed
