"""The user guide holds: its links resolve, its code runs, its names exist, and the API reference
builds without a warning and with every internal link resolving.

Links: every relative link and ``#anchor`` in README.md, docs/*.md and examples/README.md must
name a file that exists and, for a Markdown file, a heading whose GitHub-style slug is the anchor.
The API reference is built with pdoc (:mod:`kspark.tools.api_reference`) into a temporary
directory. No Kafka, no Spark: seconds.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from kspark.tools import api_reference

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", ROOT / "examples" / "README.md", *sorted(DOCS.glob("*.md"))]
GUIDE = [
    DOCS / f"{name}.md"
    for name in (
        "getting-started",
        "concepts",
        "for-kafka-streams-users",
        "testing",
        "deployment",
        "configuration",
        "limits",
    )
]

_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _prose(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code spans removed."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            yield number, re.sub(r"(`+)[^`]*?\1", "", line)


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: its text lower-cased, without punctuation, with
    hyphens for spaces."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of ``page``'s headings (a repeated heading gets ``-1``, ``-2`` ...)."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in page.read_text().splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = _HEADING.match(line)
        if m and not fenced:
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def _code_blocks(page: Path, marker: str) -> list[str]:
    """The fenced blocks that follow an HTML comment ``<!-- marker ... -->``, in order."""
    blocks, lines = [], page.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"<!-- {marker}"):
            assert _FENCE.match(lines[i + 1]), f"{page.name}:{i + 2}: no code block after the marker"
            end = next(j for j in range(i + 2, len(lines)) if _FENCE.match(lines[j]))
            blocks.append("\n".join(lines[i + 2 : end]) + "\n")
    return blocks


def test_the_slug_is_githubs() -> None:
    assert slug("Running: `kspark run`") == "running-kspark-run"
    assert slug("Exactly-once (`exactly_once_v2`)") == "exactly-once-exactly_once_v2"
    assert slug("Versions, and why") == "versions-and-why"


def test_every_relative_link_and_anchor_in_the_docs_resolves() -> None:
    broken = []
    for page in PAGES:
        for number, line in _prose(page.read_text()):
            for m in _LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                    continue
                path, _, anchor = target.partition("#")
                file = (page.parent / path).resolve() if path else page
                where = f"{page.relative_to(ROOT)}:{number}: {target}"
                if not file.exists():
                    broken.append(f"{where} (no such file)")
                elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                    broken.append(f"{where} (no heading with that anchor in {file.name})")
    assert not broken, "\n".join(broken)


def test_the_readme_lists_every_guide_page() -> None:
    readme = (ROOT / "README.md").read_text()
    for page in GUIDE:
        assert f"(docs/{page.name})" in readme, page.name


class _Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("id", "name") and value:
                self.ids.add(value)
            elif name in ("href", "src") and value:
                self.links.append(value)


@pytest.mark.slow
def test_the_api_reference_builds_without_warnings_and_its_links_resolve(tmp_path: Path) -> None:
    warnings = api_reference.build(tmp_path)
    assert not api_reference.unexpected(warnings), "\n".join(api_reference.unexpected(warnings))
    for known in api_reference.KNOWN_WARNINGS:  # a fixed one leaves the list
        assert any(w.startswith(known) for w in warnings), f"pdoc no longer warns: {known}"

    pages = {p: _Html() for p in sorted(tmp_path.rglob("*.html"))}
    for page, parsed in pages.items():
        parsed.feed(page.read_text())
    modules = {p.relative_to(tmp_path).with_suffix("").as_posix().replace("/", ".") for p in pages}
    assert set(api_reference.PUBLIC_MODULES) <= modules
    broken = []
    for page, parsed in pages.items():
        for link in parsed.links:
            if re.match(r"^[a-z][a-z0-9+.-]*:", link) or "${" in link:  # external; a JS template
                continue
            path, _, anchor = link.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(tmp_path)}: {link} (no such file)")
            elif anchor and file.suffix == ".html" and anchor not in pages[file].ids:
                broken.append(f"{page.relative_to(tmp_path)}: {link} (no such anchor)")
    assert not broken, "\n".join(broken[:50])
    kstream = (tmp_path / "kspark" / "kstream.html").read_text()
    assert 'id="KStream.filter"' in kstream


@pytest.fixture
def getting_started_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """getting-started.md's ``app.py`` and ``test_app.py``, written to a directory and imported."""
    page = DOCS / "getting-started.md"
    (app,) = _code_blocks(page, "getting-started: app.py")
    (test,) = _code_blocks(page, "getting-started: test_app.py")
    (tmp_path / "app.py").write_text(app)
    (tmp_path / "test_app.py").write_text(test)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("app", "test_app"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield importlib.import_module("app")
    for name in ("app", "test_app"):
        sys.modules.pop(name, None)


def test_the_getting_started_app_and_its_test_run(getting_started_app: Any) -> None:
    test_module = importlib.import_module("test_app")
    tests = [getattr(test_module, n) for n in dir(test_module) if n.startswith("test_")]
    assert tests
    for test in tests:
        test()
    assert getting_started_app.config["application.id"] == "big-orders"


def test_the_testing_pages_driver_example_runs(getting_started_app: Any) -> None:
    (block,) = _code_blocks(DOCS / "testing.md", "testing: the driver")
    exec(block, {"topology": getting_started_app.topology(), "config": getting_started_app.config})


def test_every_python_block_of_the_guide_compiles() -> None:
    for page in GUIDE:
        lines = page.read_text().splitlines()
        starts = [i for i, line in enumerate(lines) if line.strip() == "```python"]
        for start in starts:
            end = next(j for j in range(start + 1, len(lines)) if _FENCE.match(lines[j]))
            compile("\n".join(lines[start + 1 : end]), f"{page.name}:{start + 2}", "exec")


def _public_names() -> dict[str, Any]:
    names: dict[str, Any] = {}
    for module_name in api_reference.PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            names.setdefault(name, getattr(module, name))
    return names


def _has(obj: Any, attribute: str) -> bool:
    if hasattr(obj, attribute):
        return True
    fields = {*getattr(obj, "__dataclass_fields__", {}), *getattr(obj, "_fields", ())}
    return attribute in fields or attribute in getattr(obj, "__annotations__", {})


def test_every_python_name_in_the_kafka_streams_table_exists() -> None:
    text = (DOCS / "for-kafka-streams-users.md").read_text()
    names = _public_names()
    checked, missing = 0, []
    for line in text[text.index("## Names") : text.index("## Not in kspark")].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not line.startswith(("| `", "| Confluent")):
            continue
        for span in re.findall(r"`([^`]+)`", cells[1]):
            name = span.split("(", 1)[0]
            if not re.fullmatch(r"[A-Z][A-Za-z]*[a-z][A-Za-z]*(\.\w+)*", name):
                continue  # a keyword list, a constant, a module, a literal
            head, *rest = name.split(".")
            obj = names.get(head)
            if obj is None:
                missing.append(span)
                continue
            for attribute in rest:
                if not _has(obj, attribute):
                    missing.append(span)
                    break
                obj = getattr(obj, attribute, None)
            checked += 1
    assert not missing, f"not in kspark's public modules: {missing}"
    assert checked > 200
