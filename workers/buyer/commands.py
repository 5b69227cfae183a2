"""benchctl's commands for a buyer and procurement: submit, status, results, compare,
leaderboard, estimate, sites and probe (from the buyer's own site), and checking
certificates (verify, trust)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from contract.suites import PROFILES, SUITES
from workers.errors import CliError
from workers.i18n import _

# What display.print_rows writes; one list for every command that takes --format.
FORMATS = ["table", "json", "csv"]


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
    from workers.buyer import side_by_side
    from workers.buyer.display import print_rows

    rows = client_cli.compare(_client(args), [int(n) for n in args.nodes])
    if args.format != "table":
        print_rows(rows, args.format)
        return 0
    # The nodes go in blocks when they do not fit beside the metric and its unit; the
    # winner, said once, beside the last block.
    print_rows(side_by_side.table_rows(rows), "table", _("side by side"),
               kept=["metric", "unit"], once=["winner"])
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from workers.buyer import client as client_cli
    from workers.buyer import words
    from workers.buyer.display import print_rows

    rows = client_cli.leaderboard(_client(args), args.metric, args.region, args.format)
    if args.format != "table":
        print_rows(rows, args.format)
        return 0
    unit = words.unit(rows[0]["unit"]) if rows else ""
    named = words.label(args.metric) + (f" ({unit})" if unit else "")
    print_rows(client_cli.leaderboard_table(rows), "table",
               _("leaderboard: {metric}").format(metric=named))
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


def cmd_recommend(args: argparse.Namespace) -> int:
    import json

    from workers.buyer import recommend

    page = recommend.ask(_client(args), recommend.query(args))
    if args.format == "json":
        print(json.dumps(page, ensure_ascii=False, indent=2))
    else:
        print("\n".join(recommend.lines(page)))
    return 0


def cmd_sites(args: argparse.Namespace) -> int:
    from workers.buyer import sites
    from workers.buyer.display import print_rows

    client = _client(args)
    if args.action == "add":
        if not args.name or not args.city:
            raise CliError(_("name the site and its city: benchctl sites add \"Hangzhou "
                             "office\" --city Hangzhou"))
        site = client.call("POST", "/api/v1/sites", json={"name": args.name, "city": args.city})
        print(_("site {id}: {name} ({city})").format(**site))
        return 0
    if args.action == "show":
        site = sites.find(client, args.name or "")
        detail = client.call("GET", f"/api/v1/sites/{site['id']}")
        print_rows(sites.figure_rows(detail["figures"]), args.format,
                   _("from {name} ({city})").format(**detail))
        return 0
    print_rows([{"site": s["name"], "city": s["city"], "id": s["id"]}
                for s in client.call("GET", "/api/v1/sites")], args.format, _("your sites"))
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    from workers.buyer import sites
    from workers.buyer.display import print_rows

    if bool(args.nodes) == bool(args.region):
        raise CliError(_("name the nodes (--nodes 1,2,3) or a region (--region shenzhen)"))
    client = _client(args)
    site = sites.find(client, args.site)
    rows, failed = sites.probe(client, site, args.nodes, args.region, args.seconds,
                               not args.no_route)
    print_rows(rows, args.format, _("from {name} ({city})").format(**site))
    for name, why in failed:
        print(_("{node}: {error}").format(node=name, error=why), file=sys.stderr)
    return 1 if failed else 0


def job_hardware(p: argparse.ArgumentParser) -> None:
    """What the job runs on, alike for estimate and recommend."""
    p.add_argument("--gpus-per-node", type=int, metavar="N",
                   help=_("GPUs the job uses on each node (default: 1)"))
    p.add_argument("--cpu-only", action="store_true",
                   help=_("the job runs on CPUs: estimate it on the nodes' CPU figures (a GPU "
                          "job never takes them)"))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    job_hardware(est)
    est.add_argument("--accumulation", type=int, metavar="N",
                     help=_("micro-steps per optimizer step (default: 1)"))
    est.add_argument("--small-files", action="store_true",
                     help=_("the data is one file per sample, not packed in shards"))
    est.add_argument("--dataset-gb", type=float, metavar="GB",
                     help=_("the training data's size"))
    est.add_argument("--data-site", type=int, metavar="ID",
                     help=_("the data lives at your site ID (benchctl sites), not on the "
                            "node: staged at what benchctl probe measured from it"))
    est.add_argument("--data-use", default="copy-once", choices=["copy-once", "stream"],
                     help=_("copy the data to the node once, or stream it every step "
                            "(default: %(default)s)"))
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

    sites_cmd = sub.add_parser("sites", help=_("your sites (offices, storage) to probe nodes "
                                               "from: list, add, show"))
    client_args(sites_cmd)
    sites_cmd.add_argument("action", nargs="?", default="list", choices=["list", "add", "show"])
    sites_cmd.add_argument("name", nargs="?", help=_("the site's name (or id, for show)"))
    sites_cmd.add_argument("--city", help=_("the site's city, e.g. Hangzhou or 杭州"))
    sites_cmd.add_argument("--format", default="table", choices=FORMATS)
    sites_cmd.set_defaults(func=cmd_sites)

    probe = sub.add_parser("probe", help=_("measure RTT, throughput both ways and the route "
                                           "from this machine (your site) to candidate nodes"))
    client_args(probe)
    probe.add_argument("--site", required=True,
                       help=_("the site this machine is at: its name or id (benchctl sites add)"))
    probe.add_argument("--nodes", help=_("node ids, e.g. 1,2,3"))
    probe.add_argument("--region", help=_("every active node of a region, e.g. shenzhen"))
    probe.add_argument("--seconds", type=int, default=5, metavar="S",
                       help=_("each iperf3 test's length, at most 10 (default: %(default)s)"))
    probe.add_argument("--no-route", action="store_true", help=_("skip tracepath"))
    probe.add_argument("--format", default="table", choices=FORMATS)
    probe.set_defaults(func=cmd_probe)

    rec = sub.add_parser("recommend", help=_("where to rent for your training job, and why; "
                                             "which candidates to avoid"))
    client_args(rec)
    rec.add_argument("--preset", metavar="NAME",
                     help=_("the model trained (default: gpt2-small), e.g. gpt2-medium"))
    rec.add_argument("--steps", type=int, metavar="N",
                     help=_("optimizer steps of the job (default: 10,000)"))
    rec.add_argument("--nodes", type=int, metavar="N",
                     help=_("how many nodes the job runs on (default: 2)"))
    job_hardware(rec)
    rec.add_argument("--region", help=_("candidates in this province or city"))
    rec.add_argument("--provider", help=_("this provider's candidates"))
    rec.add_argument("--gpu-model", help=_("candidates with this GPU model"))
    rec.add_argument("--max-price", type=int, metavar="CNY",
                     help=_("at most this monthly price for all the job's nodes"))
    rec.add_argument("--rank-by", choices=["cost", "time"],
                     help=_("cheapest or fastest first (default: cost)"))
    rec.add_argument("--evidence", choices=["verified", "measured", "any"],
                     help=_("figures to stand on (default: measured, by the platform or a "
                            "buyer's trial agent)"))
    rec.add_argument("--format", default="text", choices=["text", "json"])
    rec.set_defaults(func=cmd_recommend)

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
