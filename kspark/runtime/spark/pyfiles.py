"""The application's shipped Python files (``spark-submit --py-files``) for the driver-side workers.

A stateful query's function carries the topology, and with it the application's functions,
pickled by reference to their modules. Spark unpickles it not only on the executors (whose
workers put the shipped files on ``sys.path``) but also in Python workers it starts on the driver
while planning the query: the one that checks transformWithState's state schemas
(``transform_with_state_driver_worker``, which never sets up the shipped files) and the one that
plans a direct read's offsets (``python_streaming_source_runner``, which looks for them under the
query thread's job artifact directory, ``<SparkFiles root>/streaming_job``, where they are not).
With the application's module shipped by ``--py-files``, both failed with ``No module named
...`` on a standalone cluster (tests/runtime/spark/test_standalone_cluster.py).

Both workers start with ``PYTHONPATH`` taken from the function's environment, PySpark's
``SparkContext.environment`` when the function is wrapped. :func:`shipped_python_path` puts the
driver's copies of the shipped files there while a query's stage is built, and only then. On an
executor of another machine those paths do not exist and Python skips them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["driver_python_includes", "shipped_python_path"]


def driver_python_includes(spark: SparkSession) -> list[str]:
    """Where the driver keeps the Python files the application shipped: the SparkFiles root
    (``.py`` files) and each ``.zip``/``.egg`` in it (empty for Spark Connect: no driver here)."""
    sc = getattr(spark, "sparkContext", None) if getattr(spark, "_jvm", None) is not None else None
    if sc is None:
        return []
    from pyspark import SparkFiles

    names = list(sc._python_includes or ())
    if not names:
        return []
    root = SparkFiles.getRootDirectory()
    return [root, *(os.path.join(root, name) for name in names)]


@contextlib.contextmanager
def shipped_python_path(spark: SparkSession) -> Iterator[None]:
    """Python functions wrapped meanwhile start their workers with the shipped files on
    ``PYTHONPATH`` (ahead of what the environment already gives)."""
    paths = driver_python_includes(spark)
    if not paths:
        yield
        return
    environment = spark.sparkContext.environment
    previous = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = os.pathsep.join([*paths, *([previous] if previous else [])])
    try:
        yield
    finally:
        if previous is None:
            environment.pop("PYTHONPATH", None)
        else:
            environment["PYTHONPATH"] = previous
