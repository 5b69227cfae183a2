"""Building a lab for a test: namespaces, shaped links, enrolled node workers, references."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fleet.models import Provider, ReferenceEndpoint, Region
from fleet.services import reference_keys
from lab import netlab
from lab.stack import LabStack


def lab_of(spec: dict[str, Any], live_server: Any, private_redis: Any, provider_owner: Any,
           tmp_path: Path) -> Iterator[LabStack]:
    """The lab of ``spec``, its nodes enrolled with ``provider_owner``'s token into the
    providers the spec names (created when missing), its references registered."""
    stack = LabStack(netlab.NetLab(netlab.LabSpec.from_dict(spec)), tmp_path,
                     int(live_server.url.rsplit(":", 1)[1]), private_redis.port)
    try:
        stack.up()

        def provider_for(name: str, kind: str) -> tuple[int, str]:
            provider, _ = Provider.objects.get_or_create(name=name, defaults={"kind": kind})
            provider.owners.add(provider_owner.user)
            return provider.pk, provider_owner.token

        stack.enrol_nodes(live_server.url, provider_for)

        def register(region: str, name: str, host: str, iperf3_port: int, echo_port: int,
                     node_id: int | None, key_file: Path | None) -> None:
            endpoint = ReferenceEndpoint.objects.create(
                region=Region.objects.get(code=region), name=name, host=host,
                iperf3_port=iperf3_port, echo_port=echo_port, node_id=node_id)
            if key_file is not None:
                key_file.write_text(reference_keys.issue(endpoint))

        stack.register_references(register)
        yield stack
    finally:
        stack.down()
