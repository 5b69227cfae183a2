"""One Chinese term per idea (#34): the glossary (locale/glossary.yaml) holds the term for
each idea and the variants a translator reaches for; neither catalogue may use a variant.
Before: 服务商 in the board's label and 提供商 in its filter, 得分 in benchctl and 评分 on the
pages, 训练任务 and 训练作业 for the buyer's one job. The browser test checks every Chinese page
against the same list (tests/web/test_bilingual_pages.py)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from lab.procs import REPO

GLOSSARY = REPO / "locale" / "glossary.yaml"
CATALOGUES = [REPO / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po",
              REPO / "workers" / "locale" / "zh_Hans" / "LC_MESSAGES" / "benchctl.po"]


def variants() -> dict[str, str]:
    """Each refused variant, with the term to use instead."""
    terms = yaml.safe_load(GLOSSARY.read_text())["terms"]
    return {v: t["use"] for t in terms for v in t["not"]}


def translations(po: Path) -> list[str]:
    """Every msgstr of the catalogue, its continued lines joined."""
    out, current = [], None
    for line in po.read_text().splitlines():
        if line.startswith("msgstr"):
            current = [re.sub(r'^msgstr(\[\d+\])? "', "", line)[:-1]]
            out.append(current)
        elif line.startswith('"') and current is not None:
            current.append(line[1:-1])
        else:
            current = None
    return ["".join(parts) for parts in out]


def test_no_catalogue_uses_a_variant_the_glossary_refuses() -> None:
    refused = variants()
    assert "提供商" in refused and refused["得分"] == "评分"
    found = [(po.name, text, v) for po in CATALOGUES for text in translations(po)
             for v in refused if v in text]
    assert found == [], "use the glossary's term: " + "; ".join(
        f"{name}: {v!r} -> {refused[v]!r} in {text!r}" for name, text, v in found)


def test_every_term_is_in_use() -> None:
    # A glossary term no catalogue uses is a term someone forgot to rename.
    used = "".join(t for po in CATALOGUES for t in translations(po))
    terms = yaml.safe_load(GLOSSARY.read_text())["terms"]
    assert [t["use"] for t in terms if t["use"] not in used] == []


def test_every_tool_a_chinese_sentence_names_is_glossed() -> None:
    # Before: "DataLoader 相对 num_workers=0 的加速比", "All-reduce 总线带宽": a buyer who does
    # not know PyTorch read two English names and a setting and no word of what they are.
    tools = yaml.safe_load(GLOSSARY.read_text())["tools"]
    bare = [(po.name, text, t["name"]) for po in CATALOGUES for text in translations(po)
            for t in tools if t["name"].lower() in text.lower() and t["gloss"] not in text]
    assert bare == [], "name the tool with its gloss: " + "; ".join(
        f"{name}: {tool!r} without {next(t['gloss'] for t in tools if t['name'] == tool)!r} "
        f"in {text!r}" for name, text, tool in bare)
