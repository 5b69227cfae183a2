"""Declare a platform-run reference endpoint (an `iperf3 -s` and a TCP echo server).

    manage.py reference_endpoint hangzhou ref1 10.0.0.5 --iperf3-port 5201 --echo-port 7007
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from fleet.models import Node, ReferenceEndpoint, Region


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("region", help="region code")
        parser.add_argument("name")
        parser.add_argument("host")
        parser.add_argument("--iperf3-port", type=int, default=5201)
        parser.add_argument("--echo-port", type=int, default=None)
        parser.add_argument("--report-log", default="",
                            help="the endpoint's iperf3 -J --logfile, if the platform can read it")
        parser.add_argument("--echo-log", default="",
                            help="the endpoint's echo-server --log, if the platform can read it")
        parser.add_argument("--node", type=int, default=None,
                            help="dedicate it to one node (a path only that node measures)")

    def handle(self, *args: Any, **options: Any) -> None:
        region = Region.objects.filter(code=options["region"]).first()
        if region is None:
            raise CommandError(f"unknown region {options['region']!r}")
        node = None
        if options["node"] is not None:
            node = Node.objects.filter(pk=options["node"]).first()
            if node is None:
                raise CommandError(f"unknown node {options['node']}")
        endpoint, created = ReferenceEndpoint.objects.update_or_create(
            region=region, name=options["name"],
            defaults={"host": options["host"], "iperf3_port": options["iperf3_port"],
                      "echo_port": options["echo_port"], "node": node,
                      "report_log": options["report_log"], "echo_log": options["echo_log"]})
        self.stdout.write(f"{'created' if created else 'updated'} {endpoint.as_peer()}")
