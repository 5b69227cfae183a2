"""benchctl's commands for a GPU host and a platform reference: enroll, worker, doctor,
echo-server, reference-agent."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from workers.host import config as node_config
from workers.host import inventory
from workers.host.api_client import enrol
from workers.i18n import _, gettext_noop

# workers/host/doctor.py names its checks and fixes in English (a host module, no catalogue);
# these are the fixed ones benchctl shows translated. Tool names and commands stay as they are.
DOCTOR_WORDS = (
    gettext_noop("node config"), gettext_noop("API with node key"), gettext_noop("clock skew"),
    gettext_noop("broker with node credentials"), gettext_noop("missing"),
    gettext_noop("not installed"),
    gettext_noop("GPU probes will say skipped; install the NVIDIA driver if this host has a GPU"),
    gettext_noop("the key was refused: the node may be revoked; enrol again"),
    gettext_noop("sync the clock (chrony / systemd-timesyncd)"),
    gettext_noop("check the broker address and that the node was not revoked"),
    gettext_noop("heartbeat over the broker"),
    gettext_noop("refused: this node's broker user predates heartbeats over the broker (its "
                 "worker sends them over HTTPS instead)"),
    gettext_noop("enrol the host again (benchctl enroll) for the lighter path"),
)


def cmd_enroll(args: argparse.Namespace) -> int:
    data = enrol(args.url, args.token, address=args.address or "", inventory=inventory.collect(),
                 iperf3_port=args.iperf3_port, trial=args.trial)
    data["api_url"] = args.url.rstrip("/")  # the URL that worked for us, not the platform's guess
    cfg = node_config.NodeConfig.from_dict(data)
    path = node_config.save(cfg, Path(args.config))
    print(_("enrolled as node {id} ({name}); credentials saved to {path} (mode 0600)").format(
        id=cfg.node_id, name=cfg.node_name, path=path))
    if cfg.trial_of:
        print(_("this is your trial agent of node {node} until {end}: its key is yours alone, "
                "and its figures are buyer-measured").format(node=cfg.trial_of,
                                                             end=cfg.trial_ends_at))
    if not cfg.broker_acl:
        print(_("warning: this platform runs without per-node broker users (insecure demo mode)"))
    print(_("start the worker with: {command}").format(command=f"benchctl --config {path} worker"))
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from workers.host.node_app import run_worker  # imports Celery only for the worker

    cfg = node_config.load(Path(args.config))
    print(_("node worker for node {id} ({name}), queue {queue}").format(
        id=cfg.node_id, name=cfg.node_name, queue=cfg.queue), flush=True)
    run_worker(cfg, loglevel=args.loglevel)
    return 0


def cmd_echo_server(args: argparse.Namespace) -> int:
    from workers.host import echo_server

    print(_("TCP echo server on {address}").format(address=f"{args.bind}:{args.port}"), flush=True)
    echo_server.run(args.bind, args.port, args.log)
    return 0


def cmd_reference_agent(args: argparse.Namespace) -> int:
    from workers.host.reference_agent import ReferenceAgent

    try:
        key = Path(args.key_file).read_text().strip()
    except OSError as exc:
        print(_("cannot read the reference key {path}: {error} (the platform's operator writes "
                "it with `manage.py reference_endpoint REGION NAME HOST --key-file FILE`)").format(
                    path=args.key_file, error=exc.strerror), file=sys.stderr)
        return 2
    state = Path(args.state) if args.state else Path(args.iperf3_log).with_suffix(".handed-in")
    agent = ReferenceAgent(args.url, key, Path(args.iperf3_log),
                           Path(args.echo_log) if args.echo_log else None, state,
                           interval=args.interval)
    if args.firewall_ports:
        from benchmarks.runner import CommandNotFound, CommandTimeout
        from workers.host.reference_firewall import parse_ports

        try:
            ports = parse_ports(args.firewall_ports)
            agent.guard(args.url, ports, interval=args.firewall_interval)
        except (ValueError, RuntimeError, CommandNotFound, CommandTimeout) as exc:
            # Asked for a firewall and cannot have one: not a reference open to all.
            print(_("reference agent: cannot close the ports {ports}: {error} (nft must be "
                    "installed and the agent run with CAP_NET_ADMIN)").format(
                        ports=args.firewall_ports, error=exc), file=sys.stderr)
            return 2
        print(_("reference agent: ports {ports} closed to all but the enrolled nodes").format(
            ports=", ".join(map(str, ports))), flush=True)
    if args.iperf3_auth:
        try:
            agent.authenticate(args.url, Path(args.iperf3_auth), port=args.iperf3_port)
        except (RuntimeError, OSError, ValueError) as exc:
            print(_("reference agent: cannot set up the iperf3 server's authentication in "
                    "{path}: {error}").format(path=args.iperf3_auth, error=exc), file=sys.stderr)
            return 2
        print(_("reference agent: iperf3 lets in the turns' holders only ({path})").format(
            path=args.iperf3_auth), flush=True)
    print(_("reference agent: handing in {logs} to {url}").format(
        logs=", ".join(filter(None, [args.iperf3_log, args.echo_log])), url=args.url), flush=True)
    # SIGTERM ends the agent between posts, never inside one: a post cut off mid-request
    # left the platform's side of it running against a database being emptied (a deadlock
    # with the test database's flush, CI of stop 43).
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    agent.run(stop=lambda: bool(stopping), report=lambda line: print(line, flush=True))
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from workers.host import doctor

    checks = doctor.doctor(Path(args.config))
    for check in checks:
        # The marks keep their width, so that the names line up under one another.
        mark = _("ok  ") if check.ok else _("FIX ")
        print(f"{mark} {_(check.name)}: {_(check.detail)}")
        if check.fix:
            print("     " + _("fix: {fix}").format(fix=_(check.fix)))
    code = 0 if all(c.ok for c in checks if c.name != "NVML / GPU") else 1
    if args.gpu:
        # make gpu-check's report, in its own (English) words: figures and NVML's terms.
        code = max(code, doctor.gpu_check())
    return code


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    enroll = sub.add_parser("enroll", help=_("exchange a provider's one-time token for node credentials"))
    enroll.add_argument("--url", required=True, help=_("platform URL, e.g. https://bench.example.com"))
    enroll.add_argument("--token", required=True, help=_("the enrolment token from the provider"))
    enroll.add_argument("--address", help=_("address other nodes reach this host at (needed for "
                                            "node-to-node and multi-node training tests)"))
    enroll.add_argument("--iperf3-port", type=int, default=5201,
                        help=_("port of this host's iperf3 server (default: %(default)s)"))
    enroll.add_argument("--trial", action="store_true",
                        help=_("a buyer's trial token: enrol this rented instance as your own "
                               "agent of the provider's node (POST /api/v1/nodes/ID/trial-tokens)"))
    enroll.set_defaults(func=cmd_enroll)

    worker = sub.add_parser("worker", help=_("run the node worker in the foreground"))
    worker.add_argument("--loglevel", default="INFO")
    worker.set_defaults(func=cmd_worker)

    doctor = sub.add_parser("doctor", help=_("check this host: tools, GPU, broker, API, clock"))
    doctor.add_argument("--gpu", action="store_true", help=_(
        "also run every GPU path (NVML, matmul, memory, PCIe copies, NCCL, DDP) and compare "
        "each figure with the GPU model's published one, as make gpu-check does (under 5 "
        "minutes)"))
    doctor.set_defaults(func=cmd_doctor)

    echo = sub.add_parser("echo-server", help=_("serve TCP echo (the peer side of TCP RTT)"))
    echo.add_argument("--bind", default="0.0.0.0")  # noqa: S104 - a server for peers to reach
    echo.add_argument("--port", type=int, default=7007)
    echo.add_argument("--log", default=None,
                      help=_("append the server's own record of each token-bearing connection "
                             "(JSON lines): the platform checks hosts' TCP RTT against it"))
    echo.set_defaults(func=cmd_echo_server)

    agent = sub.add_parser("reference-agent", help=_(
        "on a platform reference: hand in its servers' records to the platform"))
    agent.add_argument("--url", required=True, help=_("the platform's URL"))
    agent.add_argument("--key-file", required=True, help=_("the reference's key (mode 0600)"))
    agent.add_argument("--iperf3-log", required=True, help=_("its `iperf3 -s -J --logfile`"))
    agent.add_argument("--echo-log", default=None, help=_("its `benchctl echo-server --log`"))
    agent.add_argument("--state", default=None, help=_(
        "where the agent keeps how far it has handed in (default: beside the iperf3 log)"))
    agent.add_argument("--interval", type=float, default=0.5,
                       help=_("seconds between posts when nothing is new"))
    agent.add_argument("--firewall-ports", default=None, help=_(
        "comma-separated TCP ports (e.g. 5201,7007) to open to the platform's enrolled nodes "
        "only, with nftables (table inet benchref; needs CAP_NET_ADMIN)"))
    agent.add_argument("--firewall-interval", type=float, default=10.0,
                       help=_("seconds between fetches of the nodes' addresses"))
    agent.add_argument("--iperf3-auth", default=None, metavar="DIR", help=_(
        "keep the iperf3 server's key pair and users file here (made where missing) and let "
        "in only the run holding its turn: run the server with --rsa-private-key-path "
        "DIR/private.pem --authorized-users-path DIR/users.csv"))
    agent.add_argument("--iperf3-port", type=int, default=5201, help=_(
        "the iperf3 server's port: with --iperf3-auth, a test on it from an address that "
        "holds no turn is ended (ss -K; needs CAP_NET_ADMIN)"))
    agent.set_defaults(func=cmd_reference_agent)
