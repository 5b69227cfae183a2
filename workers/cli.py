"""benchctl: one command-line tool for GPU hosts (enroll, worker, doctor), for procurement
(submit, status, results, compare, leaderboard, estimate, verify) and for the lab (lab up/down).

Each package registers its own commands: the host's (workers.host.commands), the buyer's
(workers.buyer.commands), and any other installed package's through the `benchctl.commands`
entry point group (the lab's, lab.commands), which this module never names."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from importlib.metadata import entry_points

from workers.buyer import commands as buyer_commands
from workers.errors import CliError
from workers.host import commands as host_commands
from workers.host import config as node_config
from workers.host.api_client import ApiError
from workers.i18n import _

Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def registered() -> list[Register]:
    """The host's and the buyer's commands, then every installed package's."""
    plugins = sorted(entry_points(group="benchctl.commands"), key=lambda ep: ep.name)
    return [host_commands.register, buyer_commands.register, *(ep.load() for ep in plugins)]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchctl", description=_(
        "benchctl: one command-line tool for GPU hosts (enroll, worker, doctor), for procurement "
        "(submit, status, results, compare, leaderboard, estimate, verify) and for the lab "
        "(lab up/down)."))
    parser.add_argument("--config", default=str(node_config.DEFAULT_PATH),
                        help=_("node credentials file (default: %(default)s)"))
    parser.add_argument("--debug", action="store_true", help=_("show tracebacks"))
    sub = parser.add_subparsers(dest="command", required=True)
    for register in registered():
        register(sub)
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
