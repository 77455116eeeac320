"""``RocksDBConfigSetter``: tune the RocksDB options of persistent stores (``rocksdb.config.setter``).

As Kafka Streams' ``org.apache.kafka.streams.state.RocksDBConfigSetter``: the
config names a setter; each RocksDB database a persistent store opens (a
key-value store's, each segment of a window or session store's) first calls
``set_config(store_name, options, configs)`` on a setter of its own, with
the ``rocksdict.Options`` kspark built (Kafka Streams' defaults, see
:mod:`kspark.state.internals.rocksdb_key_value_store`) and the application's
configs; the setter changes them in place (a new block cache or table format:
``options.set_block_based_table_factory(...)``). When the database closes, ``close(store_name, options)``
releases what the setter made (a shared cache, say).

The config takes a subclass (one instance per database, as Kafka makes one
per store), an instance (shared by every database), or a function
``(store_name, options, configs) -> None``. On Spark it runs in the
executors' Python workers, so it must be importable or picklable there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kspark.errors import ConfigException

__all__ = ["RocksDBConfigSetter", "CONFIG", "resolve_config_setter"]

CONFIG = "rocksdb.config.setter"


class RocksDBConfigSetter:
    """Kafka Streams' ``RocksDBConfigSetter``: override :meth:`set_config` (and :meth:`close`)."""

    def set_config(self, store_name: str, options: Any, configs: Mapping[str, Any]) -> None:
        """Change ``options`` (a ``rocksdict.Options``) before ``store_name``'s database opens."""
        raise NotImplementedError

    def close(self, store_name: str, options: Any) -> None:
        """``store_name``'s database closed: release what :meth:`set_config` created for it."""


class _FunctionSetter(RocksDBConfigSetter):
    def __init__(self, fn: Callable[[str, Any, Mapping[str, Any]], None]) -> None:
        self._fn = fn

    def set_config(self, store_name: str, options: Any, configs: Mapping[str, Any]) -> None:
        self._fn(store_name, options, configs)


def resolve_config_setter(value: Any) -> Callable[[], RocksDBConfigSetter] | None:
    """A factory of the setter for each database, from the config's value (None: no setter)."""
    if value is None:
        return None
    if isinstance(value, type):
        if issubclass(value, RocksDBConfigSetter):
            return value
        raise ConfigException(
            f"Invalid value {value!r} for configuration {CONFIG}: a class must subclass "
            "kspark.state.RocksDBConfigSetter"
        )
    if isinstance(value, RocksDBConfigSetter):
        return lambda: value
    if callable(value):
        setter = _FunctionSetter(value)
        return lambda: setter
    raise ConfigException(
        f"Invalid value {value!r} for configuration {CONFIG}: expected a RocksDBConfigSetter "
        "subclass or instance, or a function (store_name, options, configs) -> None"
    )
