"""docs/configuration.md: what kspark.tools.config_reference renders, naming every setting kspark reads."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kspark.config import CONFIG_DEFS, PASS_THROUGH_PREFIXES, PREFIX_DEFS
from kspark.runtime.spark.settings import SETTINGS
from kspark.tools import config_reference

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "configuration.md"

# Dotted names that kspark reads from a mapping but that are not application settings, and why.
NOT_SETTINGS = {
    "cache.latest.ttl.sec": "confluent-kafka's registry-client name kspark gives latest.cache.ttl.sec as",
}

_DOTTED = re.compile(r"^[a-z][a-z0-9_]*(\.[a-zA-Z0-9_]+)+$")


def _keys_read() -> dict[str, str]:
    """Every dotted name that kspark's code reads from a mapping (``m["a.b"]``, ``m.get("a.b")``,
    ``m.pop``, ``m.setdefault``): name -> where, the first place seen."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "kspark").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            key = None
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                key = node.slice
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("get", "pop", "setdefault")
                and node.args
            ):
                key = node.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and _DOTTED.match(key.value):
                found.setdefault(key.value, f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_the_committed_page_is_what_the_generator_renders() -> None:
    assert PAGE.read_text() == config_reference.render(), (
        f"docs/configuration.md is stale: run `{config_reference.COMMAND}`"
    )


def test_the_page_names_every_definition_with_its_default_and_reader() -> None:
    page = PAGE.read_text()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([^`]+)` \|.*$", page, re.M)}
    for key, d in CONFIG_DEFS.items():
        assert key in rows, key
        assert d.doc, f"{key} has no description in kspark/config.py"
        if d.runners:
            assert any(f"| {r} |" in rows[key] for r in ("both", "Spark", "TopologyTestDriver")), key
    for setting in SETTINGS:
        assert setting.key in rows, setting.key
    for prefix in PREFIX_DEFS:
        assert f"{prefix.prefix}*" in rows, prefix.prefix
        assert prefix.doc
    assert tuple(p.prefix for p in PREFIX_DEFS) == PASS_THROUGH_PREFIXES


def test_every_setting_kspark_reads_is_on_the_page() -> None:
    page = PAGE.read_text()
    documented = set(re.findall(r"^\| `([^`*]+)` \|", page, re.M))
    prefixes = tuple(re.findall(r"^\| `([^`]+)\*` \|", page, re.M))
    assert prefixes == PASS_THROUGH_PREFIXES
    read = _keys_read()
    assert "commit.interval.ms" in read and "state.dir" in read  # the scan sees StreamsConfig's reads
    missing = {
        key: where
        for key, where in read.items()
        if key not in documented and not key.startswith(prefixes) and key not in NOT_SETTINGS
    }
    assert not missing, f"settings read but not in docs/configuration.md: {missing}"
    assert set(NOT_SETTINGS) <= set(read), "NOT_SETTINGS names something kspark no longer reads"
    for key in NOT_SETTINGS:
        assert key not in CONFIG_DEFS


def test_main_prints_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert config_reference.main([]) == 0
    assert capsys.readouterr().out == config_reference.render()
