"""kspark's PySpark worker daemon: pays the Python workers' fixed costs once per executor, not per worker.

Spark forks every Python worker from a daemon process
(``spark.python.daemon.module``, :mod:`pyspark.daemon` by default). A fresh
worker then imports pandas, pyarrow, ``pyspark.sql`` (compiled from the
source in ``pyspark.zip``, which has no bytecode) and kspark, and a reused
worker runs a full ``gc.collect()`` after every task, walking every object
it holds: the warm tasks and their stores included. py-spy profiles of
kspark's benchmarks put imports at ~30%, the collections at ~20% of all
Python samples (bench/results/history.md, "Where the time went in the first
optimisation round").

This daemon imports those modules before it forks, so every worker
inherits them already loaded -- from the installed ``pyspark`` package
(bytecode cached) rather than from ``pyspark.zip`` when the zip is the one
inside that same installation (a pip-installed PySpark); moves everything loaded so far out of the
collector's sight (``gc.freeze()``); and makes the collection after a task
a young-generation one. Old-generation garbage is still collected by
Python's automatic, threshold-driven collections, as in any Python process.
It also makes transformWithStateInPandas hand its input to kspark's stages
in slices rather than row by row (:mod:`kspark.runtime.spark.tws_input`).

:func:`kspark.runtime.spark.session.create_spark_session` sets it as the
default; a session without it runs kspark correctly, only slower.
"""

from __future__ import annotations

import gc
import sys
import types
from pathlib import Path

from kspark.runtime.spark import tws_input

__all__ = ["DAEMON_MODULE", "preload", "prefer_installed_pyspark", "main"]

DAEMON_MODULE = "kspark.runtime.spark.worker_daemon"
"""The value for ``spark.python.daemon.module``."""


def preload() -> None:
    """Import what every kspark worker needs (children forked afterwards inherit it)."""
    import confluent_kafka  # noqa: F401
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401
    import pyspark.sql.pandas.serializers
    import pyspark.sql.streaming.stateful_processor_api_client
    import pyspark.sql.streaming.stateful_processor_util
    import pyspark.worker  # noqa: F401

    import kspark.kstream
    import kspark.runtime.spark.kafka_io
    import kspark.runtime.spark.tasks  # noqa: F401


def prefer_installed_pyspark(path: list[str]) -> None:
    """Move ``pyspark.zip`` and py4j's zip behind the installed packages they were copied from.

    PySpark puts ``$SPARK_HOME/python/lib/*.zip`` first on the workers'
    path; Python compiles a zip's modules from source on every import (no
    bytecode is written into a zip). With pip's PySpark the zip lies inside
    the installed ``pyspark`` package itself, so the installed copy is the
    same code. A zip of any other Spark installation stays where it is.
    """
    for entry in list(path):
        name = Path(entry).name
        if not (name == "pyspark.zip" or (name.startswith("py4j-") and name.endswith(".zip"))):
            continue
        package = Path(entry).parents[2]  # <site-packages>/pyspark/python/lib/<zip>
        if package.name == "pyspark" and (package / "__init__.py").is_file():
            path.remove(entry)
            path.append(entry)


def _young_collections_only(gc_module: types.ModuleType) -> types.SimpleNamespace:
    """A stand-in for ``gc`` whose ``collect()`` never goes past generation 1."""
    shim = types.SimpleNamespace(
        **{k: getattr(gc_module, k) for k in dir(gc_module) if not k.startswith("__")}
    )
    shim.collect = lambda generation=1: gc_module.collect(min(generation, 1))
    return shim


def main() -> None:
    prefer_installed_pyspark(sys.path)
    import pyspark.daemon as daemon

    preload()
    tws_input.install()
    gc.collect()
    gc.freeze()
    # pyspark.daemon.manager() calls gc.collect() after each task of a reused worker.
    daemon.gc = _young_collections_only(gc)  # type: ignore[attr-defined,assignment]
    daemon.manager()


if __name__ == "__main__":
    main()
