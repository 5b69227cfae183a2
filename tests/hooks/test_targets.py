"""Where a webhook may point (hooks.services.targets): never inside the platform's network."""

from __future__ import annotations

from typing import Any

import pytest

from hooks.services import targets


def refusal(url: str) -> str | None:
    try:
        targets.resolve(url)
    except targets.Refused as exc:
        return str(exc)
    return None


@pytest.fixture
def production(settings: Any) -> Any:
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    settings.WEBHOOK_REQUIRE_HTTPS = True
    return settings


@pytest.mark.parametrize("url", ["https://127.0.0.1/hook", "https://10.0.0.5/hook",
                                 "https://192.168.1.1/", "https://172.16.0.1/",
                                 "https://100.64.0.1/", "https://[::1]/",
                                 "https://[::ffff:127.0.0.1]/", "https://localhost/hook"])
def test_loopback_private_and_shared_addresses_are_refused_in_production(
        production: Any, url: str) -> None:
    assert "loopback, private or shared" in (refusal(url) or "")


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/",
                                 "http://0.0.0.0/", "http://224.0.0.1/", "http://[fe80::1]/"])
def test_link_local_and_the_metadata_service_are_refused_even_in_development(
        settings: Any, url: str) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    assert "link-local, multicast, unspecified or reserved" in (refusal(url) or "")


def test_a_public_address_is_accepted_and_is_what_the_delivery_dials(production: Any) -> None:
    target = targets.resolve("https://93.184.215.14:8443/hook?x=1")
    assert (target.host, target.port, target.path, target.address) == (
        "93.184.215.14", 8443, "/hook?x=1", "93.184.215.14")


def test_production_takes_https_only_and_no_credentials_in_the_url(production: Any) -> None:
    assert refusal("http://93.184.215.14/") == "the URL must start with https://"
    assert refusal("ftp://93.184.215.14/") == "the URL must start with https://"
    assert "no credentials" in (refusal("https://user:pw@93.184.215.14/") or "")


def test_a_name_that_does_not_resolve_is_refused(settings: Any) -> None:
    assert "does not resolve" in (refusal("http://no-such-host.invalid/") or "")
