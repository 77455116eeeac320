"""kspark.runtime.spark.pyfiles: the shipped Python files on the driver-side workers' PYTHONPATH.

No JVM here: a stand-in session with PySpark's attributes (the standalone cluster test runs the
real thing, tests/runtime/spark/test_standalone_cluster.py).
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import pytest

from kspark.runtime.spark.pyfiles import driver_python_includes, shipped_python_path

pyspark = pytest.importorskip("pyspark")


def _session(includes: list[str], environment: dict[str, str], jvm: object = object()) -> Any:
    context = SimpleNamespace(_python_includes=includes, environment=environment)
    return SimpleNamespace(_jvm=jvm, sparkContext=context)


@pytest.fixture(autouse=True)
def files_root(monkeypatch: pytest.MonkeyPatch) -> str:
    root = "/driver/userFiles-1"
    monkeypatch.setattr(pyspark.SparkFiles, "getRootDirectory", staticmethod(lambda: root))
    return root


def test_the_driver_copies_of_shipped_files_lead_pythonpath_while_a_stage_is_built(files_root: str) -> None:
    environment = {"PYTHONPATH": "/already/there"}
    spark = _session(["my_functions.zip", "deps.egg"], environment)
    with shipped_python_path(spark):
        assert environment["PYTHONPATH"] == os.pathsep.join(
            [files_root, f"{files_root}/my_functions.zip", f"{files_root}/deps.egg", "/already/there"]
        )
    assert environment == {"PYTHONPATH": "/already/there"}, "put back afterwards"


def test_pythonpath_is_removed_again_when_there_was_none(files_root: str) -> None:
    environment: dict[str, str] = {}
    with shipped_python_path(_session(["my_functions.zip"], environment)):
        assert environment["PYTHONPATH"] == os.pathsep.join([files_root, f"{files_root}/my_functions.zip"])
    assert environment == {}


def test_put_back_when_building_the_stage_fails() -> None:
    environment: dict[str, str] = {}
    with pytest.raises(RuntimeError), shipped_python_path(_session(["a.zip"], environment)):
        raise RuntimeError("planning failed")
    assert environment == {}


def test_nothing_shipped_or_no_driver_jvm_changes_nothing() -> None:
    for spark in (_session([], {}), _session(["a.zip"], {}, jvm=None)):
        with shipped_python_path(spark):
            assert spark.sparkContext.environment == {}
        assert driver_python_includes(spark) == []
