"""docs/kafka-streams-api.md: rendered from kspark.tools.api_parity, whose rows name real kspark
attributes and are exactly the public methods of the kafka-streams 4.1.1 jar's classes."""

from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

import pytest

from kspark.tools import api_parity
from kspark.tools.api_parity import CLASSES, NA, ROWS, YES

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "kafka-streams-api.md"


def test_the_page_is_what_the_rows_render() -> None:
    assert PAGE.read_text() == api_parity.render(), f"regenerate: {api_parity.COMMAND}"


def test_every_kspark_name_exists_on_its_class() -> None:
    wrong = []
    for row in ROWS:
        if row.kspark is None:
            assert not (row.driver == YES or row.spark == YES), f"{row}: not provided but marked yes"
            continue
        target = CLASSES[row.java_class]
        assert target is not None, f"{row}: a kspark name on a class kspark does not have"
        module, name = target.split(":")
        cls = getattr(importlib.import_module(module), name)
        fields = getattr(cls, "__dataclass_fields__", {})
        if not hasattr(cls, row.kspark) and row.kspark not in fields:
            wrong.append(f"{row.java_class}.{row.method} -> {name}.{row.kspark}")
    assert not wrong, f"kspark names that do not exist: {wrong}"


def test_rows_are_unique_and_statuses_known() -> None:
    keys = [(r.java_class, r.method) for r in ROWS]
    assert len(keys) == len(set(keys)), "a Kafka method listed twice"
    assert {r.driver for r in ROWS} | {r.spark for r in ROWS} <= {YES, NA, api_parity.NO}


def _public_methods(javap_out: str) -> list[str]:
    names: list[str] = []
    for line in javap_out.splitlines():
        if not line.startswith("  public") or "(" not in line:
            continue
        name = re.sub(r"\(.*", "", line).split()[-1]
        if name.startswith("org.apache") or name in ("equals", "hashCode", "toString"):
            continue  # constructors and Object's methods
        if name not in names:
            names.append(name)
    return names


@pytest.mark.integration
def test_rows_are_exactly_the_public_methods_of_kafka_streams_4_1() -> None:
    from kspark.jvm.jars import classpath, find_java

    jars = ":".join(str(p) for p in classpath(["kafka-streams"]))
    javap = find_java().parent / "javap"
    if not javap.exists():
        pytest.skip(f"no javap next to {find_java()} (a JRE without the JDK tools)")
    classes = ["org.apache.kafka.streams." + c for c in CLASSES]
    out = subprocess.run([str(javap), "-cp", jars, *classes], capture_output=True, text=True, check=True)
    # javap prints one "... class|interface <name>" header per class, then its members
    per_class: dict[str, str] = {}
    current = None
    for line in out.stdout.splitlines():
        header = re.match(r"^(?:public )?(?:abstract |final |static )*(?:class|interface) ([\w.$]+)", line)
        if header:
            current = re.sub(r"<.*", "", header.group(1)).removeprefix("org.apache.kafka.streams.")
            per_class[current] = ""
        elif current is not None:
            per_class[current] += line + "\n"
    assert set(per_class) == set(CLASSES)
    java = {(c, m) for c, text in per_class.items() for m in _public_methods(text)}
    ours = {(r.java_class, r.method) for r in ROWS}
    assert not java - ours, f"Kafka Streams methods with no row: {sorted(java - ours)}"
    assert not ours - java, f"rows that are not Kafka Streams methods: {sorted(ours - java)}"
    assert all(r.driver in (YES, NA) or r.kspark is None for r in ROWS)
