"""The board's filters in the reader's language: the test profile is chosen by name from a
list (a text box showed the raw id "default" as its placeholder on the Chinese board, #34),
and the empty choice says which profile the board then ranks."""

from __future__ import annotations

import re
from typing import Any

from django.test import Client

from tests.fixtures import measured, trial_agent


def profile_select(html: str) -> list[tuple[str, bool, str]]:
    found = re.search(r'<select name="profile">(.*?)</select>', html, re.S)
    assert found, "no test profile choice on the board"
    return [(value, bool(selected), text.strip()) for value, selected, text in re.findall(
        r'<option value="([^"]*)"( selected)?>([^<]*)</option>', found.group(1))]


def test_the_test_profile_is_chosen_by_its_name_and_the_default_is_named(
        buyer: Any, enrol_node: Any) -> None:
    hz1, hz2 = enrol_node("hz-1"), enrol_node("hz-2")
    for node in (hz1, hz2):
        measured(buyer, trial_agent(buyer, node), 9.0, "quick")
    measured(buyer, trial_agent(buyer, hz1), 9.2, "default")

    html = Client().get("/zh-hans/").content.decode()
    assert 'placeholder="default"' not in html
    assert profile_select(html) == [("", False, "测得最多的（快速）"), ("default", False, "标准"),
                                    ("quick", False, "快速")]
    html = Client().get("/en/?profile=default").content.decode()
    assert profile_select(html) == [("", False, "the most measured (quick)"),
                                    ("default", True, "standard"), ("quick", False, "quick")]
