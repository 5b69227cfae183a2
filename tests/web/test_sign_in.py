"""Signing in and out from the header, in the page's language (#34).

Before: the header's 登录 link led to a sign-in that ended on /accounts/profile/ (a 404 that
listed every URL pattern with DEBUG on), /zh-hans/accounts/login/ was a 404, and a signed-in
person could not sign out.
"""

from __future__ import annotations

from typing import Any

from django.test import Client

from jobs.models import Run
from jobs.services import submission
from tests.fixtures import PASSWORD  # make_actor's


def test_sign_in_in_chinese_ends_on_the_board_and_sign_out_is_in_the_header(buyer: Any) -> None:
    web = Client(enforce_csrf_checks=False)
    board = web.get("/zh-hans/").content.decode()
    assert 'href="/zh-hans/accounts/login/"' in board and "登录" in board
    page = web.get("/zh-hans/accounts/login/")
    assert page.status_code == 200 and "用户名" in page.content.decode()
    signed_in = web.post("/zh-hans/accounts/login/", {"username": "buyer", "password": PASSWORD})
    # No page to go back to: the buyer's own jobs (tested below).
    assert signed_in.status_code == 302 and signed_in["Location"] == "/zh-hans/jobs/", signed_in
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


def test_a_sign_in_lands_on_the_buyers_own_jobs_and_no_one_elses(buyer: Any, other_buyer: Any,
                                                                  enrol_node: Any) -> None:
    node = enrol_node("hz-jobs-1").node
    mine, _ = submission.submit(buyer.user, [node.pk], "noop")
    Run.objects.filter(job=mine).update(status=Run.Status.SUCCEEDED)
    theirs, _ = submission.submit(other_buyer.user, [node.pk], "noop")

    web = Client()
    signed_in = web.post("/zh-hans/accounts/login/", {"username": "buyer", "password": PASSWORD})
    assert signed_in.status_code == 302 and signed_in["Location"] == "/zh-hans/jobs/"
    page = web.get("/zh-hans/jobs/").content.decode()
    assert "我的任务" in page and f'href="/zh-hans/jobs/{mine.pk}/"' in page
    assert "已完成" in page and "hz-jobs-1" in page
    # Another buyer's job is neither listed nor readable by address.
    assert f"/jobs/{theirs.pk}/" not in page
    assert web.get(f"/zh-hans/jobs/{theirs.pk}/").status_code == 404
    # Signed out, the list asks for a sign-in first.
    web.post("/zh-hans/accounts/logout/")
    assert web.get("/en/jobs/")["Location"].startswith("/accounts/login/?next=/en/jobs/")


def test_a_password_change_keeps_this_sign_in_and_ends_the_others(buyer: Any) -> None:
    here, elsewhere = Client(), Client()
    for web in (here, elsewhere):
        assert web.login(username="buyer", password=PASSWORD)
    form = here.get("/zh-hans/accounts/password/").content.decode()
    assert "修改密码" in form and 'name="old_password"' in form
    # A wrong old password changes nothing and says so.
    wrong = here.post("/en/accounts/password/", {"old_password": "not-it",
                                                 "new_password1": "a-New-pass-7391",
                                                 "new_password2": "a-New-pass-7391"})
    assert wrong.status_code == 200 and "incorrectly" in wrong.content.decode()
    done = here.post("/en/accounts/password/", {"old_password": PASSWORD,
                                                "new_password1": "a-New-pass-7391",
                                                "new_password2": "a-New-pass-7391"})
    assert done.status_code == 302 and done["Location"] == "/en/accounts/password/done/"
    assert "Sign out" in here.get("/en/").content.decode()
    # The other session (a stolen cookie, an old laptop) is signed out by the change.
    assert "Sign out" not in elsewhere.get("/en/").content.decode()
    assert not Client().login(username="buyer", password=PASSWORD)
    assert Client().login(username="buyer", password="a-New-pass-7391")
