"""benchctl: one command-line tool for GPU hosts (enroll, worker, doctor), for procurement
(submit, status, results, compare, leaderboard, estimate, verify) and for the lab (lab up/down)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from contract.suites import PROFILES, SUITES
from workers.errors import CliError
from workers.host import config as node_config
from workers.host import inventory
from workers.host.api_client import ApiError, enrol
from workers.i18n import _, gettext_noop

# What display.print_rows writes; one list for every command that takes --format.
FORMATS = ["table", "json", "csv"]
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
    agent.run(report=lambda line: print(line, flush=True))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """Signature against a pinned key, expiry, and revocation from the pinned platform.

    Exit 0: valid; 1: invalid (bad signature, expired, revoked); 2: cannot tell (no trusted
    key, or revocation unknown because the platform did not answer an explicit "valid").
    """
    import json

    from workers.buyer import certificate, trust_store

    try:
        cert = json.loads(Path(args.certificate).read_text())
    except (OSError, ValueError) as exc:
        raise CliError(_("cannot read {path}: {error}").format(path=args.certificate,
                                                                error=exc)) from None
    document = cert.get("document") if isinstance(cert, dict) else None
    issuer = (document or {}).get("issuer") or {}
    named_id = str(issuer.get("key_id", "")) if isinstance(issuer, dict) else ""
    trusted_url = ""
    if args.public_key:
        pem = Path(args.public_key).read_bytes()
    else:
        # Never the key the certificate's own issuer URL serves: that is the attacker's.
        entry = trust_store.load().get(named_id)
        if entry is None:
            raise CliError(_("no trusted key with id {id} in {path}: add the platform's key "
                             "with `benchctl trust add URL` (and compare its fingerprint), or "
                             "give --public-key FILE").format(id=named_id or _("(none)"),
                                                               path=trust_store.path()))
        pem, trusted_url = entry.pem, entry.url
    try:
        key = certificate.load_public_key(pem)
    except ValueError as exc:
        raise CliError(_("bad public key: {error}").format(error=exc)) from None
    verdict = certificate.verify(cert, key)
    if not verdict.valid or args.offline:
        verdict.revocation = _("not checked (offline)") if verdict.valid else _("not checked")
        print(verdict.line())
        return 0 if verdict.valid else 1
    # The signature is good, so the document (and its issuer URL) is the platform's own.
    url = (args.url or trusted_url or str(issuer.get("url", ""))).rstrip("/")
    status = _revocation_status(url, (document or {}).get("id"))
    if status == "revoked":
        verdict.valid = False
        verdict.revocation = _("checked online: REVOKED")
    elif status == "valid":
        verdict.revocation = _("checked online: not revoked")
    else:
        verdict.revocation = _("unknown ({why}); use --offline to check only the signature").format(
            why=status)
        print(verdict.line())
        return 2
    print(verdict.line())
    return 0 if verdict.valid else 1


def _revocation_status(url: str, cert_id: Any) -> str:
    """"valid", "revoked", or why it cannot be told."""
    import requests

    if not url:
        return _("no platform URL to ask")
    try:
        answer = requests.get(f"{url}/api/v1/certificates/{cert_id}", timeout=10)
        status = answer.json().get("status") if answer.ok else None
    except (requests.RequestException, ValueError, AttributeError) as exc:
        return _("{url} did not answer: {error}").format(url=url, error=exc.__class__.__name__)
    if status in ("valid", "revoked"):
        return str(status)
    return _("{url} answered {status} without an explicit valid").format(
        url=url, status=answer.status_code)


def cmd_trust(args: argparse.Namespace) -> int:
    """Fetch a platform's public key once and pin it; print its fingerprint to compare."""
    import requests

    from workers.buyer import trust_store

    url = args.url.rstrip("/")
    try:
        pem = requests.get(f"{url}/api/v1/certificates/public-key",
                           timeout=10).json()["public_key_pem"].encode()
    except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
        raise CliError(_("could not fetch the public key from {url}: {error}").format(
            url=url, error=exc)) from None
    entry = trust_store.add(pem, url)
    print(_("trusted key {id} from {url} in {path}").format(id=entry.key_id, url=url,
                                                            path=trust_store.path()))
    print(_("fingerprint {fingerprint}: compare it with the one the platform publishes "
            "elsewhere (its web page, its operator) before relying on it").format(
        fingerprint=trust_store.fingerprint(entry.pem)))
    return 0


def _client(args: argparse.Namespace) -> Any:
    from workers.buyer.client import Client

    return Client.resolve(args.url, args.token)


def cmd_submit(args: argparse.Namespace) -> int:
    from workers.buyer import client as client_cli
    from workers.buyer.display import print_rows

    nodes = [int(n) for n in args.nodes.replace(",", " ").split()]
    job = client_cli.submit(_client(args), nodes, args.suite, args.profile,
                            client_cli.parse_params(args.param), args.wait)
    if args.wait:
        print_rows(client_cli.result_rows(job), args.format, _("job {id}").format(id=job["id"]))
        return 0 if job["status"] == "succeeded" else 1
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from workers.buyer.display import print_rows

    job = _client(args).call("GET", f"/api/v1/benchmarks/{args.job}")
    rows = [{"node": r["node"]["name"], "status": r["status"],
             "progress": " ".join(str(v) for v in (r.get("progress") or {}).values()),
             "error": r["error"]} for r in job["runs"]]
    print_rows(rows, "table", _("job {id}: {status}").format(id=job["id"], status=job["status"]))
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    from workers.buyer import client as client_cli
    from workers.buyer.display import print_rows

    job = _client(args).call("GET", f"/api/v1/benchmarks/{args.job}")
    print_rows(client_cli.result_rows(job), args.format, _("job {id}").format(id=job["id"]))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from workers.buyer import client as client_cli
    from workers.buyer.display import print_rows

    rows = client_cli.compare(_client(args), [int(n) for n in args.nodes])
    print_rows(rows, args.format, _("side by side"))
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from workers.buyer import client as client_cli
    from workers.buyer.display import print_rows

    rows = client_cli.leaderboard(_client(args), args.metric, args.region, args.format)
    print_rows(rows, args.format, _("leaderboard: {metric}").format(metric=args.metric))
    return 0


def cmd_estimate(args: argparse.Namespace) -> int:
    from workers.buyer import estimate
    from workers.buyer.display import print_rows

    request = estimate.body(args)  # a bad invocation fails before the platform is asked
    page = estimate.ask(_client(args), request)
    if args.format != "table":
        print_rows(estimate.rows(page), args.format)
        return 0
    ranked, skipped = estimate.ranked_rows(page), estimate.skipped_rows(page)
    if ranked:
        print_rows(ranked, "table", estimate.title(page))
    else:
        print(_("no candidate could be estimated: widen the filters, or name candidates with "
                "--clusters / --candidate-nodes"))
    if skipped:
        print_rows(skipped, "table", _("skipped"))
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


def cmd_lab(args: argparse.Namespace) -> int:
    # Imported here: the lab (netns, tc, the platform's own processes) is for root on a lab
    # host, and every other command stays free of it.
    from lab import cli as lab

    if args.lab_command == "up":
        lab.up(lab.spec_path(args.spec))
    else:
        removed = lab.down()
        print(_("removed: {what}").format(
            what=", ".join(removed) if removed else _("nothing (no lab was up)")))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchctl", description=_(
        "benchctl: one command-line tool for GPU hosts (enroll, worker, doctor), for procurement "
        "(submit, status, results, compare, leaderboard, estimate, verify) and for the lab "
        "(lab up/down)."))
    parser.add_argument("--config", default=str(node_config.DEFAULT_PATH),
                        help=_("node credentials file (default: %(default)s)"))
    parser.add_argument("--debug", action="store_true", help=_("show tracebacks"))
    sub = parser.add_subparsers(dest="command", required=True)

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
    def client_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--url", help=_("platform URL (or BENCH_URL, or the client config file)"))
        p.add_argument("--token", help=_("API token (or BENCH_TOKEN, or the client config file)"))

    submit = sub.add_parser("submit", help=_("benchmark nodes (procurement)"))
    client_args(submit)
    submit.add_argument("--nodes", required=True, help=_("node ids, e.g. 3,7"))
    submit.add_argument("--suite", default="network",
                        choices=list(SUITES))
    submit.add_argument("--profile", default="default", choices=list(PROFILES))
    submit.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    submit.add_argument("--wait", action="store_true", help=_("live progress, then the results"))
    submit.add_argument("--format", default="table", choices=FORMATS)
    submit.set_defaults(func=cmd_submit)

    status = sub.add_parser("status", help=_("a job's runs and where they are"))
    client_args(status)
    status.add_argument("job", type=int)
    status.set_defaults(func=cmd_status)

    results = sub.add_parser("results", help=_("a job's figures"))
    client_args(results)
    results.add_argument("job", type=int)
    results.add_argument("--format", default="table", choices=FORMATS)
    results.set_defaults(func=cmd_results)

    compare = sub.add_parser("compare", help=_("nodes side by side, with the winner per metric"))
    client_args(compare)
    compare.add_argument("nodes", nargs="+", help=_("node ids"))
    compare.add_argument("--format", default="table", choices=FORMATS)
    compare.set_defaults(func=cmd_compare)

    board = sub.add_parser("leaderboard", help=_("the shared leaderboard"))
    client_args(board)
    board.add_argument("--metric", default="network.tcp_throughput")
    board.add_argument("--region", default="", help=_("province (zhejiang) or city (hangzhou)"))
    board.add_argument("--format", default="table", choices=FORMATS)
    board.set_defaults(func=cmd_leaderboard)

    est = sub.add_parser("estimate", help=_("what your training job would take and cost on "
                                            "each candidate, from their measured figures"))
    client_args(est)
    est.add_argument("--preset", metavar="NAME",
                     help=_("a model the platform knows, e.g. gpt2-medium, resnet50"))
    est.add_argument("--params", type=float, metavar="N",
                     help=_("trainable parameters, e.g. 355e6 (instead of --preset, or over it)"))
    est.add_argument("--flops-per-sample", type=float, metavar="FLOPS",
                     help=_("training FLOPs of one sample, forward and backward"))
    est.add_argument("--global-batch", type=int, metavar="N",
                     help=_("samples per optimizer step, all GPUs"))
    est.add_argument("--steps", type=int, required=True, metavar="N",
                     help=_("optimizer steps of the job"))
    est.add_argument("--nodes", type=int, default=1, metavar="N",
                     help=_("how many nodes the job runs on (default: %(default)s); candidate "
                            "node ids go in --candidate-nodes"))
    est.add_argument("--gpus-per-node", type=int, metavar="N",
                     help=_("GPUs the job uses on each node (default: 1)"))
    est.add_argument("--accumulation", type=int, metavar="N",
                     help=_("micro-steps per optimizer step (default: 1)"))
    est.add_argument("--small-files", action="store_true",
                     help=_("the data is one file per sample, not packed in shards"))
    est.add_argument("--checkpoint-gb", type=float, metavar="GB", help=_("size of one checkpoint"))
    est.add_argument("--checkpoint-every", type=int, metavar="STEPS",
                     help=_("steps between two checkpoints"))
    # The API's own choices (it checks them again); here for --help and an early error.
    est.add_argument("--precision", choices=["bf16", "fp16", "fp32"],
                     help=_("which measured matmul figure to use (default: the preset's, else "
                            "bf16)"))
    est.add_argument("--candidate-nodes", metavar="IDS",
                     help=_("node ids, e.g. 3,7 (one-node jobs)"))
    est.add_argument("--clusters", metavar="IDS",
                     help=_("cluster ids from the cluster board, e.g. 3,4"))
    est.add_argument("--region", help=_("without ids: candidates in this province or city"))
    est.add_argument("--provider", help=_("without ids: this provider's candidates"))
    est.add_argument("--gpu-model", help=_("without ids: candidates with this GPU model"))
    est.add_argument("--max-price", type=int, metavar="CNY",
                     help=_("without ids: at most this monthly price for the whole candidate"))
    est.add_argument("--rank-by", default="cost", choices=["cost", "time"],
                     help=_("cheapest or fastest first (default: %(default)s)"))
    est.add_argument("--format", default="table", choices=FORMATS)
    est.set_defaults(func=cmd_estimate)

    doctor = sub.add_parser("doctor", help=_("check this host: tools, GPU, broker, API, clock"))
    doctor.add_argument("--gpu", action="store_true", help=_(
        "also run every GPU path (NVML, matmul, memory, PCIe copies, NCCL, DDP) and compare "
        "each figure with the GPU model's published one, as make gpu-check does (under 5 "
        "minutes)"))
    doctor.set_defaults(func=cmd_doctor)

    verify = sub.add_parser("verify", help=_("check a certificate: signature, expiry, revocation"))
    verify.add_argument("certificate", help=_("the certificate's JSON file"))
    verify.add_argument("--public-key", help=_("the platform's public key (PEM); default: the "
                                               "trusted key with the certificate's key id "
                                               "(BENCH_TRUSTED_KEYS)"))
    verify.add_argument("--url", help=_("the platform to ask about revocation (default: the URL "
                                        "the trusted key came from)"))
    verify.add_argument("--offline", action="store_true", help=_("do not contact the platform"))
    verify.set_defaults(func=cmd_verify)
    trust = sub.add_parser("trust", help=_("pin a platform's certificate key (verify uses it)"))
    trust_sub = trust.add_subparsers(dest="trust_command", required=True)
    trust_add = trust_sub.add_parser("add", help=_("fetch the key from URL once and trust it"))
    trust_add.add_argument("url", help=_("the platform, e.g. https://bench.example.cn"))
    trust_add.set_defaults(func=cmd_trust)

    lab = sub.add_parser("lab", help=_("the emulated multi-host network (root)"))
    lab_sub = lab.add_subparsers(dest="lab_command", required=True)
    lab_up = lab_sub.add_parser("up", help=_("build a lab from a spec and run it until Ctrl-C"))
    lab_up.add_argument("--spec", default="demo",
                        help=_("a spec file, or the name of a published one (demo, tour)"))
    lab_sub.add_parser("down", help=_("remove every lab namespace, link and process"))
    lab.set_defaults(func=cmd_lab)

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
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO)
    try:
        return int(args.func(args))
    except (ApiError, node_config.ConfigError, CliError, OSError) as exc:
        if args.debug:
            raise
        print(_("benchctl: {error}").format(error=exc), file=sys.stderr)
        if isinstance(exc, ApiError) and exc.status == 409:
            print(_("fix: {fix}").format(fix=_("ask the provider for a new enrolment token")),
                  file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
