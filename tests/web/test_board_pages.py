"""The HTML board in pages of BOARD_HTML_ROWS nodes, as the API's board is paged (#35): a
page of 200 rows spent two fifths of its time rendering them; the rest are a link away."""

from __future__ import annotations

import html as html_lib
import re
from typing import Any

from django.test import Client, override_settings

from tests.fixtures import measured


def ranks(page: str) -> list[tuple[int, str]]:
    return [(int(rank), name) for name, rank in re.findall(
        r'<tr data-node="([^"]+)">.*?<td class="num rank">(\d+)</td>', page, re.S)]


def link(page: str, rel: str) -> str | None:
    found = re.search(rf'<a href="([^"]+)" rel="{rel}"', page)
    return html_lib.unescape(found.group(1)) if found else None


@override_settings(BOARD_HTML_ROWS=2)
def test_the_board_pages_keep_the_ranks_and_the_reader_s_choices(
        buyer: Any, enrol_node: Any) -> None:
    for name, gbps in (("hz-1", 5.0), ("hz-2", 9.0), ("hz-3", 7.0)):
        measured(buyer, enrol_node(name), gbps)
    first = Client().get("/en/?evidence=any&region=zhejiang").content.decode()
    assert ranks(first) == [(1, "hz-2"), (2, "hz-3")]
    assert link(first, "prev") is None
    following = link(first, "next")
    assert following is not None and "page=2" in following and "evidence=any" in following
    assert "region=zhejiang" in following
    second = Client().get(f"/en/{following}").content.decode()
    assert ranks(second) == [(3, "hz-1")]  # ranked on, not from 1 again
    assert link(second, "next") is None and "page=1" in (link(second, "prev") or "")
    assert "下一页" in Client().get("/zh-hans/?evidence=any").content.decode()


def test_a_page_that_is_not_a_page_number_is_a_clear_400(buyer: Any) -> None:
    for junk in ("0", "two", "-1", "10001"):
        response = Client().get(f"/en/?page={junk}")
        assert response.status_code == 400, junk
        assert "page is a whole number from 1 to 10000" in response.content.decode()
