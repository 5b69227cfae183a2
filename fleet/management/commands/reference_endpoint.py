"""Declare a platform-run reference endpoint (an `iperf3 -s` and a TCP echo server).

    manage.py reference_endpoint hangzhou ref1 10.0.0.5 --iperf3-port 5201 --echo-port 7007 \
        --key-file ref1.key

With --key-file, a new key for the reference's agent is written there (mode 0600), for
`benchctl reference-agent --key-file` on the reference's host; the old key stops working.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from fleet.models import Node, ReferenceEndpoint, Region
from fleet.services import reference_keys


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("region", help="region code")
        parser.add_argument("name")
        parser.add_argument("host")
        parser.add_argument("--iperf3-port", type=int, default=5201)
        parser.add_argument("--echo-port", type=int, default=None)
        parser.add_argument("--key-file", default=None,
                            help="write a new key for the reference's agent to this file")
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
                      "echo_port": options["echo_port"], "node": node})
        self.stdout.write(f"{'created' if created else 'updated'} {endpoint.as_peer()}")
        if options["key_file"]:
            path = Path(options["key_file"])
            path.touch(mode=0o600)
            path.chmod(0o600)
            path.write_text(reference_keys.issue(endpoint) + "\n")
            self.stdout.write(f"the reference agent's key is in {path}")
