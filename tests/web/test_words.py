"""The pages' words for codes (#34: "buyer,platform" after 主机自报, a reference shown as
reference:hangzhou:ref-hangzhou-hz-a100-01, `quick` and `full` as they are stored, "3x",
"us"), in both languages."""

from __future__ import annotations

from django.utils import translation

from board.stability_board import times
from web import words


def test_codes_read_as_words_in_chinese_and_in_english() -> None:
    cities = {"hangzhou": "Hangzhou"}
    with translation.override("zh-hans"):
        assert words.requester("buyer,platform") == "买家、平台"
        assert words.peer("reference:hangzhou:ref-hangzhou-hz-a100-01", cities) == "杭州参考节点"
        assert words.peer("hz-a100-02", cities) == "hz-a100-02"  # another node: its name
        assert (words.profile("quick"), words.suite("full")) == ("快速", "完整测试套件")
        assert words.unit("storage.randread_clat_p99") == "微秒"
        assert times(3.2) == "3 倍"
    with translation.override("en"):
        assert words.requester("buyer,platform") == "buyer, platform"
        assert words.peer("reference:hangzhou:ref-hangzhou-hz-a100-01", cities) == \
            "the Hangzhou reference"
        assert words.unit("storage.randread_clat_p99") == "µs" and times(3.2) == "3x"
    # A code the tables do not know stays as it is rather than failing the page.
    assert words.profile("custom") == "custom" and words.requester("robot") == "robot"
