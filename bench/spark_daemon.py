"""Experiment, not part of kspark: a PySpark daemon that pays the Python workers' fixed costs once.

Spark forks every Python worker from ``pyspark.daemon``; each fresh worker then
imports pandas, pyarrow, ``pyspark.sql`` (compiled from ``pyspark.zip`` source)
and kspark, and after every task it runs a full ``gc.collect()`` over all its
objects. Profiles of kspark (docs/benchmarks.md) put those at about half of
its Python CPU. This module, used with
``--kspark-conf spark.python.daemon.module=bench.spark_daemon``, imports those
modules in the daemon before it forks (children inherit them), freezes them
out of the collector (``gc.freeze()``), and makes the post-task collection a
young-generation one, to measure what the runner would gain from doing the
same. Cyclic garbage that survives into the old generation is then only
collected by Python's own automatic collections (an experiment's trade-off).
"""

from __future__ import annotations

import gc
import types

import pyspark.daemon as daemon

__all__ = ["main"]


def _preload() -> None:
    import confluent_kafka  # noqa: F401
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401
    import pyspark.sql.pandas.serializers
    import pyspark.sql.streaming.stateful_processor_api_client
    import pyspark.sql.streaming.stateful_processor_util
    import pyspark.worker  # noqa: F401

    import kspark.runtime.spark.kafka_io
    import kspark.runtime.spark.tasks  # noqa: F401


def main() -> None:
    _preload()
    gc.collect()
    gc.freeze()
    # daemon.manager() calls gc.collect() after each task of a reused worker
    shim = types.SimpleNamespace(**{k: getattr(gc, k) for k in dir(gc) if not k.startswith("__")})
    shim.collect = lambda generation=1: gc.collect(min(generation, 1))
    daemon.gc = shim  # type: ignore[attr-defined,assignment]
    daemon.manager()


if __name__ == "__main__":
    main()
