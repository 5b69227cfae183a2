"""`benchctl lab up|down`: registered with benchctl by entry point (pyproject.toml), so
that the host's tool names no lab module and the lab stays out of every other command."""

from __future__ import annotations

import argparse

from workers.i18n import _


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


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lab = sub.add_parser("lab", help=_("the emulated multi-host network (root)"))
    lab_sub = lab.add_subparsers(dest="lab_command", required=True)
    lab_up = lab_sub.add_parser("up", help=_("build a lab from a spec and run it until Ctrl-C"))
    lab_up.add_argument("--spec", default="demo",
                        help=_("a spec file, or the name of a published one (demo, tour)"))
    lab_sub.add_parser("down", help=_("remove every lab namespace, link and process"))
    lab.set_defaults(func=cmd_lab)
