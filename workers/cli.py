"""benchctl: one command-line tool for GPU hosts (enroll, worker, doctor), for procurement
(submit, status, results, compare, leaderboard, verify) and for the lab (lab up/down)."""

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

# What client_cli.print_rows writes; one list for every command that takes --format.
FORMATS = ["table", "json", "csv"]


def cmd_enroll(args: argparse.Namespace) -> int:
    data = enrol(args.url, args.token, address=args.address or "", inventory=inventory.collect(),
                 iperf3_port=args.iperf3_port)
    data["api_url"] = args.url.rstrip("/")  # the URL that worked for us, not the platform's guess
    cfg = node_config.NodeConfig.from_dict(data)
    path = node_config.save(cfg, Path(args.config))
    print(f"enrolled as node {cfg.node_id} ({cfg.node_name}); credentials saved to {path} (mode 0600)")
    if not cfg.broker_acl:
        print("warning: this platform runs without per-node broker users (insecure demo mode)")
    print(f"start the worker with: benchctl --config {path} worker")
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from workers.host.node_app import run_worker  # imports Celery only for the worker

    cfg = node_config.load(Path(args.config))
    print(f"node worker for node {cfg.node_id} ({cfg.node_name}), queue {cfg.queue}", flush=True)
    run_worker(cfg, loglevel=args.loglevel)
    return 0


def cmd_echo_server(args: argparse.Namespace) -> int:
    from workers.host import echo_server

    print(f"TCP echo server on {args.bind}:{args.port}", flush=True)
    echo_server.run(args.bind, args.port, args.log)
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
        raise CliError(f"cannot read {args.certificate}: {exc}") from None
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
            raise CliError(f"no trusted key with id {named_id or '(none)'} in "
                           f"{trust_store.path()}: add the platform's key with `benchctl "
                           "trust add URL` (and compare its fingerprint), or give "
                           "--public-key FILE")
        pem, trusted_url = entry.pem, entry.url
    try:
        key = certificate.load_public_key(pem)
    except ValueError as exc:
        raise CliError(f"bad public key: {exc}") from None
    verdict = certificate.verify(cert, key)
    if not verdict.valid or args.offline:
        verdict.revocation = "not checked (offline)" if verdict.valid else "not checked"
        print(verdict.line())
        return 0 if verdict.valid else 1
    # The signature is good, so the document (and its issuer URL) is the platform's own.
    url = (args.url or trusted_url or str(issuer.get("url", ""))).rstrip("/")
    status = _revocation_status(url, (document or {}).get("id"))
    if status == "revoked":
        verdict.valid = False
        verdict.revocation = "checked online: REVOKED"
    elif status == "valid":
        verdict.revocation = "checked online: not revoked"
    else:
        verdict.revocation = f"unknown ({status}); use --offline to check only the signature"
        print(verdict.line())
        return 2
    print(verdict.line())
    return 0 if verdict.valid else 1


def _revocation_status(url: str, cert_id: Any) -> str:
    """"valid", "revoked", or why it cannot be told."""
    import requests

    if not url:
        return "no platform URL to ask"
    try:
        answer = requests.get(f"{url}/api/v1/certificates/{cert_id}", timeout=10)
        status = answer.json().get("status") if answer.ok else None
    except (requests.RequestException, ValueError, AttributeError) as exc:
        return f"{url} did not answer: {exc.__class__.__name__}"
    if status in ("valid", "revoked"):
        return str(status)
    return f"{url} answered {answer.status_code} without an explicit valid"


def cmd_trust(args: argparse.Namespace) -> int:
    """Fetch a platform's public key once and pin it; print its fingerprint to compare."""
    import requests

    from workers.buyer import trust_store

    url = args.url.rstrip("/")
    try:
        pem = requests.get(f"{url}/api/v1/certificates/public-key",
                           timeout=10).json()["public_key_pem"].encode()
    except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
        raise CliError(f"could not fetch the public key from {url}: {exc}") from None
    entry = trust_store.add(pem, url)
    print(f"trusted key {entry.key_id} from {url} in {trust_store.path()}")
    print(f"fingerprint {trust_store.fingerprint(entry.pem)}: compare it with the one the "
          "platform publishes elsewhere (its web page, its operator) before relying on it")
    return 0


def _client(args: argparse.Namespace) -> Any:
    from workers.buyer.client import Client

    return Client.resolve(args.url, args.token)


def cmd_submit(args: argparse.Namespace) -> int:
    from workers.buyer import client as client_cli

    nodes = [int(n) for n in args.nodes.replace(",", " ").split()]
    job = client_cli.submit(_client(args), nodes, args.suite, args.profile,
                            client_cli.parse_params(args.param), args.wait)
    if args.wait:
        client_cli.print_rows(client_cli.result_rows(job), args.format, f"job {job['id']}")
        return 0 if job["status"] == "succeeded" else 1
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from workers.buyer import client as client_cli

    job = _client(args).call("GET", f"/api/v1/benchmarks/{args.job}")
    rows = [{"node": r["node"]["name"], "status": r["status"],
             "progress": " ".join(str(v) for v in (r.get("progress") or {}).values()),
             "error": r["error"]} for r in job["runs"]]
    client_cli.print_rows(rows, "table", f"job {job['id']}: {job['status']}")
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    from workers.buyer import client as client_cli

    job = _client(args).call("GET", f"/api/v1/benchmarks/{args.job}")
    client_cli.print_rows(client_cli.result_rows(job), args.format, f"job {job['id']}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from workers.buyer import client as client_cli

    rows = client_cli.compare(_client(args), [int(n) for n in args.nodes])
    client_cli.print_rows(rows, args.format, "side by side")
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from workers.buyer import client as client_cli

    rows = client_cli.leaderboard(_client(args), args.metric, args.region, args.format)
    client_cli.print_rows(rows, args.format, f"leaderboard: {args.metric}")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from workers.host import doctor

    checks = doctor.doctor(Path(args.config))
    for check in checks:
        mark = "ok  " if check.ok else "FIX "
        print(f"{mark} {check.name}: {check.detail}" + (f"\n     fix: {check.fix}" if check.fix else ""))
    return 0 if all(c.ok for c in checks if c.name != "NVML / GPU") else 1


def cmd_lab(args: argparse.Namespace) -> int:
    # Imported here: the lab (netns, tc, the platform's own processes) is for root on a lab
    # host, and every other command stays free of it.
    from lab import cli as lab

    if args.lab_command == "up":
        lab.up(lab.spec_path(args.spec))
    else:
        removed = lab.down()
        print("removed: " + (", ".join(removed) if removed else "nothing (no lab was up)"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchctl", description=__doc__)
    parser.add_argument("--config", default=str(node_config.DEFAULT_PATH),
                        help="node credentials file (default: %(default)s)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)

    enroll = sub.add_parser("enroll", help="exchange a provider's one-time token for node credentials")
    enroll.add_argument("--url", required=True, help="platform URL, e.g. https://bench.example.com")
    enroll.add_argument("--token", required=True, help="the enrolment token from the provider")
    enroll.add_argument("--address", help="address other nodes reach this host at "
                        "(needed for node-to-node and multi-node training tests)")
    enroll.add_argument("--iperf3-port", type=int, default=5201,
                        help="port of this host's iperf3 server (default: %(default)s)")
    enroll.set_defaults(func=cmd_enroll)

    worker = sub.add_parser("worker", help="run the node worker in the foreground")
    worker.add_argument("--loglevel", default="INFO")
    worker.set_defaults(func=cmd_worker)
    def client_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--url", help="platform URL (or BENCH_URL, or the client config file)")
        p.add_argument("--token", help="API token (or BENCH_TOKEN, or the client config file)")

    submit = sub.add_parser("submit", help="benchmark nodes (procurement)")
    client_args(submit)
    submit.add_argument("--nodes", required=True, help="node ids, e.g. 3,7")
    submit.add_argument("--suite", default="network",
                        choices=list(SUITES))
    submit.add_argument("--profile", default="default", choices=list(PROFILES))
    submit.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    submit.add_argument("--wait", action="store_true", help="live progress, then the results")
    submit.add_argument("--format", default="table", choices=FORMATS)
    submit.set_defaults(func=cmd_submit)

    status = sub.add_parser("status", help="a job's runs and where they are")
    client_args(status)
    status.add_argument("job", type=int)
    status.set_defaults(func=cmd_status)

    results = sub.add_parser("results", help="a job's figures")
    client_args(results)
    results.add_argument("job", type=int)
    results.add_argument("--format", default="table", choices=FORMATS)
    results.set_defaults(func=cmd_results)

    compare = sub.add_parser("compare", help="nodes side by side, with the winner per metric")
    client_args(compare)
    compare.add_argument("nodes", nargs="+", help="node ids")
    compare.add_argument("--format", default="table", choices=FORMATS)
    compare.set_defaults(func=cmd_compare)

    board = sub.add_parser("leaderboard", help="the shared leaderboard")
    client_args(board)
    board.add_argument("--metric", default="network.tcp_throughput")
    board.add_argument("--region", default="", help="province (zhejiang) or city (hangzhou)")
    board.add_argument("--format", default="table", choices=FORMATS)
    board.set_defaults(func=cmd_leaderboard)

    doctor = sub.add_parser("doctor", help="check this host: tools, GPU, broker, API, clock")
    doctor.set_defaults(func=cmd_doctor)

    verify = sub.add_parser("verify", help="check a certificate: signature, expiry, revocation")
    verify.add_argument("certificate", help="the certificate's JSON file")
    verify.add_argument("--public-key", help="the platform's public key (PEM); default: the "
                        "trusted key with the certificate's key id (BENCH_TRUSTED_KEYS)")
    verify.add_argument("--url", help="the platform to ask about revocation (default: the URL "
                        "the trusted key came from)")
    verify.add_argument("--offline", action="store_true", help="do not contact the platform")
    verify.set_defaults(func=cmd_verify)
    trust = sub.add_parser("trust", help="pin a platform's certificate key (verify uses it)")
    trust_sub = trust.add_subparsers(dest="trust_command", required=True)
    trust_add = trust_sub.add_parser("add", help="fetch the key from URL once and trust it")
    trust_add.add_argument("url", help="the platform, e.g. https://bench.example.cn")
    trust_add.set_defaults(func=cmd_trust)

    lab = sub.add_parser("lab", help="the emulated multi-host network (root)")
    lab_sub = lab.add_subparsers(dest="lab_command", required=True)
    lab_up = lab_sub.add_parser("up", help="build a lab from a spec and run it until Ctrl-C")
    lab_up.add_argument("--spec", default="demo",
                        help="a spec file, or the name of a published one (demo, tour)")
    lab_sub.add_parser("down", help="remove every lab namespace, link and process")
    lab.set_defaults(func=cmd_lab)

    echo = sub.add_parser("echo-server", help="serve TCP echo (the peer side of TCP RTT)")
    echo.add_argument("--bind", default="0.0.0.0")  # noqa: S104 - a server for peers to reach
    echo.add_argument("--port", type=int, default=7007)
    echo.add_argument("--log", default=None,
                      help="append the server's own record of each token-bearing connection "
                           "(JSON lines): the platform checks hosts' TCP RTT against it")
    echo.set_defaults(func=cmd_echo_server)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO)
    try:
        return int(args.func(args))
    except (ApiError, node_config.ConfigError, CliError, OSError) as exc:
        if args.debug:
            raise
        print(f"benchctl: {exc}", file=sys.stderr)
        if isinstance(exc, ApiError) and exc.status == 409:
            print("fix: ask the provider for a new enrolment token", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
