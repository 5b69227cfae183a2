"""The layout's rules, checked on the source: dependencies point one way, the host's code has
no Django in it, and nothing outside tests/ needs the tests."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lab.procs import REPO

# The floors, lowest first: fleet <- hooks <- jobs <- {board, certification} <- {api, web}.
# jobs writes runs and samples and tells the floors above by signal (and buyers' webhooks
# through hooks' outbox); board derives every figure; web is
# the only app that reads board, certification and jobs together for a page (api serves
# them as JSON). contract is what the host and the platform share; benchmarks and workers
# run on the host; lab and perf are tools that start both as processes.
PLATFORM = {"fleet", "hooks", "jobs", "board", "certification", "api", "web", "config"}
HOST = {"benchmarks", "workers"}
TOOLS = {"lab", "perf"}
DJANGO = {"django", "rest_framework"}

# package -> packages it may not import (directly or lazily, anywhere in its modules)
FORBIDDEN = {
    "fleet": {"hooks", "jobs", "board", "certification", "api", "web"} | HOST | TOOLS,
    # Webhooks sit between fleet and jobs: jobs and certification emit into its outbox.
    "hooks": {"jobs", "board", "certification", "api", "web"} | HOST | TOOLS,
    "jobs": {"board", "certification", "api", "web"} | HOST | TOOLS,
    "board": {"certification", "api", "web"} | HOST | TOOLS,
    "certification": {"board", "api", "web"} | HOST | TOOLS,
    "api": {"web"} | HOST | TOOLS,
    "web": {"api"} | HOST | TOOLS,
    # What runs on a host, and what it shares with the platform: no Django, no platform app.
    "contract": DJANGO | PLATFORM | HOST | TOOLS,
    "benchmarks": DJANGO | PLATFORM | {"workers"} | TOOLS,
    # benchctl's lab commands come by entry point (workers.cli.registered), never by name.
    "workers": DJANGO | PLATFORM | TOOLS,
    # The lab starts the platform and the host agent as processes; it imports neither's Django.
    "lab": DJANGO | PLATFORM | {"perf"},
}


def imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def sources(package: str) -> list[Path]:
    return [p for p in (REPO / package).rglob("*.py") if "migrations" not in p.parts]


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_dependencies_point_one_way(package: str) -> None:
    wrong = {str(p.relative_to(REPO)): sorted(imported(p) & FORBIDDEN[package])
             for p in sources(package)}
    assert {path: names for path, names in wrong.items() if names} == {}


def test_every_package_has_its_row() -> None:
    # A new top-level package gets its place in the floors before it can import anything.
    top = {d.name for d in REPO.iterdir() if d.is_dir() and (d / "__init__.py").exists()}
    assert top - {"tests", "config", "perf"} == set(FORBIDDEN)


def test_nothing_outside_tests_imports_the_tests() -> None:
    top = [d.name for d in REPO.iterdir() if d.is_dir() and (d / "__init__.py").exists()
           and d.name != "tests"]
    wrong = [str(p.relative_to(REPO)) for package in top for p in sources(package)
             if "tests" in imported(p)]
    assert wrong == []


def test_platform_is_not_a_python_package() -> None:
    # It would shadow the standard library's `platform` module.
    assert not (REPO / "platform" / "__init__.py").exists()
