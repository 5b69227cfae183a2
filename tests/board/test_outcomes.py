"""An estimate's outcomes are codes with values (contract/outcomes.py): the API, the web page
and benchctl word each from the one template, in English and in Chinese, and nothing reads
English text back to find out what was meant."""

from __future__ import annotations

import gettext
import re
from html import unescape
from pathlib import Path

import pytest
from django.utils import translation
from django.utils.html import strip_tags

from contract import outcomes
from contract.numbers import number
from contract.outcomes import Skipped
from web.pages import estimate as page
from workers.buyer import estimate as benchctl

REPO = Path(__file__).resolve().parents[2]
VALUES = {"nodes": 4, "size": 2, "metric": "gpu.matmul_tflops_bf16", "profile": "quick",
          "names": "hz-1, hz-2"}
FIELDS = re.compile(r"\{(\w*)\}")
ESTIMATE = {"bottleneck": "sync", "shares": {"sync": 0.91}, "hours": 135.3,
            "what_ifs": [{"name": "link_10gbe", "hours": 18.84}, {"name": "packed", "hours": 135.0}]}


def skipped(code: str) -> Skipped:
    return Skipped(code, {k: VALUES[k] for k in FIELDS.findall(outcomes.SKIPPED[code])})


@pytest.mark.parametrize("code", sorted(outcomes.SKIPPED))
def test_the_page_and_benchctl_word_a_skipped_candidate_from_its_code_as_the_api_does(
        code: str) -> None:
    said = skipped(code)
    with translation.override("en"):
        api = said.words(translation.gettext)
        html = page.reason(said)
    # The page shows the metric's label, not its key; everything else is the same words.
    shown = unescape(strip_tags(html)).replace("Matmul bf16", "gpu.matmul_tflops_bf16")
    # (a sentence on the page begins with a capital; a name the template begins with, as is)
    assert shown == page.capitalised(outcomes.SKIPPED[code]).format(**said.values)
    assert shown.lower() == api.lower()
    row = {"skipped": "", "skipped_code": code, "skipped_values": said.values}
    assert benchctl.reason(row) == api
    # A code this benchctl does not know (a newer platform): the platform's own words.
    assert benchctl.reason(row | {"skipped_code": "later", "skipped": "its words"}) == "its words"


@pytest.mark.parametrize("code", sorted(outcomes.SKIPPED))
def test_every_outcome_is_chinese_in_both_catalogues_with_the_same_fields(code: str) -> None:
    catalogues = {
        "django": REPO / "locale/zh_Hans/LC_MESSAGES/django.mo",
        "benchctl": REPO / "workers/locale/zh_Hans/LC_MESSAGES/benchctl.mo"}
    templates = [outcomes.SKIPPED[code], outcomes.COMPUTE_BOUND, outcomes.PART_SHARE,
                 outcomes.WHAT_IF_CUTS, *outcomes.WHAT_IFS.values(), *outcomes.PARTS.values()]
    for name, path in catalogues.items():
        with path.open("rb") as mo:
            zh = gettext.GNUTranslations(mo)
        for template in templates:
            assert zh.gettext(template) != template, (name, template)
            assert sorted(FIELDS.findall(zh.gettext(template))) == sorted(
                FIELDS.findall(template)), (name, template)


def test_the_bottleneck_sentence_is_one_wording_for_the_api_the_page_and_benchctl() -> None:
    english = ("gradient sync: 91% of the step; a 10 GbE link would cut the job from 135 h "
               "to 18.8 h")
    with translation.override("en"):
        assert outcomes.summary(ESTIMATE, number, translation.gettext) == english
    assert benchctl.summary(ESTIMATE).startswith("gradient sync: 91% of the step; a 10 GbE link")
    with translation.override("zh-hans"):
        zh = outcomes.summary(ESTIMATE, number, translation.gettext)
    assert zh.startswith("梯度同步：占单步时间的 91%；换用 10 GbE 链路") and "135" in zh
    # A what-if that saves under 5% is not worth naming; compute alone bounds nothing else.
    assert outcomes.summary(ESTIMATE | {"what_ifs": [{"name": "packed", "hours": 135.0}]},
                            number) == "gradient sync: 91% of the step"
    assert outcomes.summary({"bottleneck": ""}, number) == outcomes.COMPUTE_BOUND
