"""Every example is an application module that ``kspark run`` and ``kspark describe`` can load."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kspark import Topology
from kspark.cli import load_app, main

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
EXAMPLES = sorted(path.stem for path in EXAMPLES_DIR.glob("*.py"))


@pytest.fixture
def undo_load_app(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """load_app extends sys.path and PYTHONPATH (for Spark's workers) and registers the module
    under its name, replacing the one the other tests imported: all undone afterwards."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    before = {name: sys.modules.get(name) for name in EXAMPLES}
    yield
    for name, module in before.items():
        if module is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = module


def test_there_are_the_seven_examples_of_issue_24() -> None:
    assert EXAMPLES == [
        "dedupe",
        "fraud_alerts",
        "order_enrichment",
        "pageview_windows",
        "sessionization",
        "top_n",
        "word_count",
    ]


@pytest.mark.usefixtures("undo_load_app")
@pytest.mark.parametrize("name", EXAMPLES)
def test_load_app_gives_a_topology_and_a_config_naming_the_broker_from_the_environment(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KSPARK_BOOTSTRAP", "broker.example:9093")

    topology, config = load_app(EXAMPLES_DIR / f"{name}.py")

    assert isinstance(topology, Topology)
    assert config["bootstrap.servers"] == "broker.example:9093"
    assert config["application.id"] == f"kspark-example-{name.replace('_', '-')}"


@pytest.mark.usefixtures("undo_load_app")
def test_kspark_describe_prints_an_examples_topology(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", str(EXAMPLES_DIR / "word_count.py")]) == 0
    described = capsys.readouterr().out
    assert "Source: KSTREAM-SOURCE-0000000000 (topics: [text-lines])" in described
    assert "Sink: KSTREAM-SINK-0000000008 (topic: word-counts)" in described
