"""Signing in and out from the header, in the page's language (#34).

Before: the header's 登录 link led to a sign-in that ended on /accounts/profile/ (a 404 that
listed every URL pattern with DEBUG on), /zh-hans/accounts/login/ was a 404, and a signed-in
person could not sign out.
"""

from __future__ import annotations

from typing import Any

from django.test import Client

PASSWORD = "unused-password"  # tests.fixtures.make_actor's


def test_sign_in_in_chinese_ends_on_the_board_and_sign_out_is_in_the_header(buyer: Any) -> None:
    web = Client(enforce_csrf_checks=False)
    board = web.get("/zh-hans/").content.decode()
    assert 'href="/zh-hans/accounts/login/"' in board and "登录" in board
    page = web.get("/zh-hans/accounts/login/")
    assert page.status_code == 200 and "用户名" in page.content.decode()
    signed_in = web.post("/zh-hans/accounts/login/", {"username": "buyer", "password": PASSWORD})
    assert signed_in.status_code == 302 and signed_in["Location"] == "/zh-hans/", signed_in
    header = web.get("/zh-hans/").content.decode()
    assert 'action="/zh-hans/accounts/logout/"' in header and "退出登录" in header
    signed_out = web.post("/zh-hans/accounts/logout/")
    assert signed_out.status_code == 302 and signed_out["Location"] == "/zh-hans/"
    assert "退出登录" not in web.get("/zh-hans/").content.decode()
    # A wrong password stays on the page, says so, and signs nobody in.
    wrong = web.post("/en/accounts/login/", {"username": "buyer", "password": "not-it"})
    assert wrong.status_code == 200 and "did not match" in wrong.content.decode()
    assert "Sign out" not in web.get("/en/").content.decode()


def test_the_old_unprefixed_addresses_still_sign_in_and_go_back_where_asked(buyer: Any) -> None:
    web = Client()
    signed_in = web.post("/accounts/login/?next=/en/certification/",
                         {"username": "buyer", "password": PASSWORD, "next": "/en/certification/"})
    assert signed_in.status_code == 302 and signed_in["Location"] == "/en/certification/"
    assert web.post("/accounts/logout/").status_code == 302
