"""The board fits its screen (#34 item 2), in a real headless Chromium, in both languages: at
1366 px the columns a buyer decides on (rank, node, provider, region, the ranked figure with its
range, stability, evidence, score, price, CNY per point) show without a sideways scroll and the
other columns wait behind "more columns" (a checkbox, no script); at 390 px each node is a card,
the filters are folded, the header's words are whole and the charts' labels are at least 11 px.
Screenshots land in var/test-output/screenshots/board-fit-{lang}-{width}.png (the phone's first
screen and its cards beside them)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.web.test_bilingual_pages import (  # noqa: F401  (fixtures)
    SHOTS,
    board,
    browser,
    english_words,
    open_tab,
    signed_in,
)

pytestmark = pytest.mark.slow

LANGS = (("zh-hans", "zh-CN"), ("en", "en-US"))

# Every visible header and cell of the board, with its right edge and its width.
BOXES = """() => [...document.querySelectorAll('#leaderboard th, #leaderboard td')]
  .filter(e => e.getBoundingClientRect().width > 1)
  .map(e => { const r = e.getBoundingClientRect();
              return {cls: e.className, text: e.textContent.trim().slice(0, 30), left: r.left,
                      right: r.right, width: r.width}; })"""

# Folded out of sight (a pixel, clipped), still in the table for a screen reader or a copy.
HIDDEN_MORE = """() => [...document.querySelectorAll('#leaderboard .more')].map(e => {
  const r = e.getBoundingClientRect();
  return r.width <= 1 && r.height <= 1 && getComputedStyle(e).clipPath !== 'none';
})"""

# Each header word on one line: one box, no taller than a line and a half.
HEADER_LINES = """() => [...document.querySelectorAll(
    'header.top .brand, header.top nav a, header.top nav button')].map(e => {
  const style = getComputedStyle(e), size = parseFloat(style.fontSize);
  const line = style.lineHeight === 'normal' ? 1.5 * size : parseFloat(style.lineHeight);
  return {text: e.textContent.trim(), boxes: e.getClientRects().length,
          height: e.getBoundingClientRect().height, line: line};
})"""

# The drawn size of each chart's text: its font size times the SVG's scale (drawn / viewBox).
CHART_TEXT = """() => [...document.querySelectorAll('.charts svg.chart')].flatMap(svg => {
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  return [...svg.querySelectorAll('text')].map(t =>
    parseFloat(t.getAttribute('font-size') || getComputedStyle(t).fontSize) * scale);
})"""


def board_url(live_server: Any, lang: str) -> str:
    return f"{live_server.url}/{lang}/?evidence=any"


def test_the_decision_columns_fit_at_1366_and_the_rest_wait_behind_more_columns(
        board: Any, browser: Any, live_server: Any, buyer: Any) -> None:  # noqa: F811
    for lang, locale in LANGS:
        tab = open_tab(browser, locale, width=1366)
        signed_in(tab, buyer, live_server)
        tab.goto(board_url(live_server, lang))
        tab.screenshot(path=str(SHOTS / f"board-fit-{lang}-1366.png"), full_page=True)
        assert tab.evaluate("document.documentElement.scrollWidth") <= 1366, lang
        boxes = tab.evaluate(BOXES)
        headers = tab.eval_on_selector_all("#leaderboard thead th:not(.more)", "els => els.length")
        assert headers >= 12, lang  # compare, #, node .. price per point: all there
        assert [b for b in boxes if b["right"] > 1366 or b["left"] < 0] == [], lang
        # ... inside the board's own box too: nothing to scroll sideways to.
        assert tab.evaluate("""(e => e.scrollWidth <= e.clientWidth)(
            document.querySelector('#leaderboard').parentElement)"""), lang
        for cls in ("figure", "spread-cell", "stability", "evidence", "score", "price", "per-point"):
            assert tab.locator(f"#leaderboard td.{cls}").first.is_visible(), (lang, cls)
        # The other columns (GPU, the other figures, the date) wait behind "more columns".
        hidden = tab.evaluate(HIDDEN_MORE)
        assert len(hidden) >= 3 * 6 and all(hidden), lang
        assert tab.locator("#filters").is_visible()  # wide screens: the filters unfolded
        tab.click("label[for=more-columns]")
        assert not any(tab.evaluate(HIDDEN_MORE)), lang
        tab.locator("#leaderboard").screenshot(path=str(SHOTS / f"board-fit-{lang}-1366-more.png"))
        assert tab.locator("#leaderboard th.more a[data-metric]").count() >= 4
        measured = tab.locator("#leaderboard td.measured").first
        assert measured.evaluate("e => getComputedStyle(e).whiteSpace") == "nowrap"
        assert measured.evaluate("e => e.getClientRects().length") == 1
        assert tab.evaluate("document.documentElement.scrollWidth") <= 1366, lang  # it scrolls in its box
        assert [h for h in tab.evaluate(HEADER_LINES)
                if h["boxes"] != 1 or h["height"] > 1.5 * h["line"]] == [], lang
        assert min(tab.evaluate(CHART_TEXT)) >= 11 - 0.01, lang
        if lang == "zh-hans":
            assert english_words(tab) == set()
        assert tab.errors == [], tab.errors


def test_at_390_each_node_is_a_card_the_filters_fold_and_words_stay_whole(
        board: Any, browser: Any, live_server: Any, buyer: Any) -> None:  # noqa: F811
    for lang, locale in LANGS:
        tab = open_tab(browser, locale, width=390)
        signed_in(tab, buyer, live_server)
        tab.goto(board_url(live_server, lang))
        tab.screenshot(path=str(SHOTS / f"board-fit-{lang}-390.png"), full_page=True)
        tab.screenshot(path=str(SHOTS / f"board-fit-{lang}-390-first-screen.png"))
        tab.locator("#leaderboard").screenshot(path=str(SHOTS / f"board-fit-{lang}-390-cards.png"))
        assert tab.evaluate("document.documentElement.scrollWidth") <= 400, lang
        # Cards: no header row, each cell labelled, no box of the board wider than the screen.
        assert not tab.locator("#leaderboard thead").is_visible()
        assert [b for b in tab.evaluate(BOXES) if b["right"] > 390 or b["left"] < 0] == [], lang
        rows = tab.locator("#leaderboard tbody tr")
        assert rows.count() == 3
        assert rows.first.evaluate("e => getComputedStyle(e).display") == "flex"
        price = tab.locator("#leaderboard td.price").first
        label = price.evaluate("e => getComputedStyle(e, '::before').content")
        assert ("价格" if lang == "zh-hans" else "Price") in label
        # Every card shows its figures without a scroll, each below the one before it.
        tops = tab.eval_on_selector_all("#leaderboard tbody tr",
                                        "rows => rows.map(r => r.getBoundingClientRect().top)")
        assert tops == sorted(tops) and len(set(tops)) == 3
        # The filters are folded, a summary line saying what they are; unfolded on a tap.
        assert not tab.locator("#filters").is_visible() and not tab.locator("#job-form").is_visible()
        summary = tab.inner_text("#filter-box > summary")
        assert ("筛选" if lang == "zh-hans" else "Filters") in summary
        assert tab.locator("#leaderboard").bounding_box()["y"] < 2 * 900  # the board is near the top
        tab.click("#filter-box > summary")
        assert tab.locator("#filters").is_visible()
        # More columns show inside the cards, still no wider than the screen.
        tab.click("label[for=more-columns]")
        assert tab.locator("#leaderboard td.measured").first.is_visible()
        assert tab.evaluate("document.documentElement.scrollWidth") <= 400, lang
        assert [b for b in tab.evaluate(BOXES) if b["right"] > 390] == [], lang
        # The header: each word on one line (排行榜, 认证, 退出登录 whole).
        assert [h for h in tab.evaluate(HEADER_LINES)
                if h["boxes"] != 1 or h["height"] > 1.5 * h["line"]] == [], lang
        # The charts draw their labels at 11 px or more (their cards scroll sideways instead).
        sizes = tab.evaluate(CHART_TEXT)
        assert sizes and min(sizes) >= 11 - 0.01, (lang, min(sizes))
        if lang == "zh-hans":
            assert english_words(tab) == set()
        assert tab.errors == [], tab.errors
