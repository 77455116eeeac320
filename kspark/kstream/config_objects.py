"""The DSL's configuration objects: Consumed, Produced, Grouped, Materialized, ...

Each is an immutable value (a frozen dataclass) built with keyword arguments
or with the Kafka-like factories (``Materialized.as_("store")``,
``Consumed.with_(key_serde, value_serde)``, ``Named.as_("x")``). The
``with_*`` methods return a modified copy, as the Java builders do.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from enum import Enum
from typing import Any

from kspark.processor.api import to_millis
from kspark.state.dsl_store_suppliers import (
    BuiltInDslStoreSuppliers,
    DslStoreSuppliers,
    resolve_dsl_store_suppliers,
)

__all__ = [
    "Named",
    "Consumed",
    "Produced",
    "Grouped",
    "Materialized",
    "Joined",
    "StreamJoined",
    "Repartitioned",
    "Branched",
    "Printed",
    "AutoOffsetReset",
]

_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
_MAX_NAME_LENGTH = 249


def _validate_name(name: str | None, what: str) -> str | None:
    """Kafka's ``Named.validate``: names become topic and store names, so the same charset applies."""
    if name is None:
        return None
    if not isinstance(name, str):
        raise TypeError(f"{what} name must be a str, got {name!r}")
    if not name:
        raise ValueError(f"{what} name is illegal, it can't be empty")
    if len(name) > _MAX_NAME_LENGTH:
        raise ValueError(
            f"{what} name is illegal, it can't be longer than {_MAX_NAME_LENGTH} characters, name: {name}"
        )
    if not _LEGAL_NAME.match(name):
        raise ValueError(
            f'{what} name "{name}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return name


class AutoOffsetReset:
    """Where a source starts when no committed offset exists (Kafka's ``Topology.AutoOffsetReset``)."""

    EARLIEST = "earliest"
    LATEST = "latest"
    NONE = "none"


@dataclass(frozen=True)
class Named:
    """A name for the processor(s) one DSL operation creates."""

    name: str | None = None

    def __post_init__(self) -> None:
        _validate_name(self.name, "Named")

    @staticmethod
    def as_(name: str) -> Named:
        return Named(name)

    def with_name(self, name: str) -> Named:
        return Named(name)


@dataclass(frozen=True)
class Consumed:
    """How a source topic is read: serdes, timestamp extractor, offset reset, source name."""

    key_serde: Any = None
    value_serde: Any = None
    timestamp_extractor: Callable[..., int] | None = None
    offset_reset: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        _validate_name(self.name, "Consumed")
        if self.offset_reset not in (
            None,
            AutoOffsetReset.EARLIEST,
            AutoOffsetReset.LATEST,
            AutoOffsetReset.NONE,
        ):
            raise ValueError(
                f"Consumed offset_reset must be 'earliest', 'latest' or 'none', got {self.offset_reset!r}"
            )

    @staticmethod
    def with_(key_serde: Any = None, value_serde: Any = None, **kwargs: Any) -> Consumed:
        return Consumed(key_serde=key_serde, value_serde=value_serde, **kwargs)

    @staticmethod
    def as_(name: str) -> Consumed:
        return Consumed(name=name)

    def with_key_serde(self, serde: Any) -> Consumed:
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Any) -> Consumed:
        return replace(self, value_serde=serde)

    def with_timestamp_extractor(self, extractor: Callable[..., int]) -> Consumed:
        return replace(self, timestamp_extractor=extractor)

    def with_offset_reset_policy(self, policy: str) -> Consumed:
        return replace(self, offset_reset=policy)

    def with_name(self, name: str) -> Consumed:
        return replace(self, name=name)


@dataclass(frozen=True)
class Produced:
    """How records are written to a topic: serdes, partitioner, sink name."""

    key_serde: Any = None
    value_serde: Any = None
    partitioner: Callable[..., Any] | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        _validate_name(self.name, "Produced")

    @staticmethod
    def with_(
        key_serde: Any = None, value_serde: Any = None, partitioner: Callable[..., Any] | None = None
    ) -> Produced:
        return Produced(key_serde=key_serde, value_serde=value_serde, partitioner=partitioner)

    @staticmethod
    def as_(name: str) -> Produced:
        return Produced(name=name)

    @staticmethod
    def key_serde_(serde: Any) -> Produced:
        return Produced(key_serde=serde)

    @staticmethod
    def value_serde_(serde: Any) -> Produced:
        return Produced(value_serde=serde)

    @staticmethod
    def stream_partitioner(partitioner: Callable[..., Any]) -> Produced:
        return Produced(partitioner=partitioner)

    def with_key_serde(self, serde: Any) -> Produced:
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Any) -> Produced:
        return replace(self, value_serde=serde)

    def with_stream_partitioner(self, partitioner: Callable[..., Any]) -> Produced:
        return replace(self, partitioner=partitioner)

    def with_name(self, name: str) -> Produced:
        return replace(self, name=name)


@dataclass(frozen=True)
class Grouped:
    """Serdes and repartition-topic name for ``group_by`` / ``group_by_key``."""

    name: str | None = None
    key_serde: Any = None
    value_serde: Any = None

    def __post_init__(self) -> None:
        _validate_name(self.name, "Grouped")

    @staticmethod
    def key_serde_(serde: Any) -> Grouped:
        return Grouped(key_serde=serde)

    @staticmethod
    def value_serde_(serde: Any) -> Grouped:
        return Grouped(value_serde=serde)

    @staticmethod
    def as_(name: str) -> Grouped:
        return Grouped(name=name)

    @staticmethod
    def with_(key_serde: Any = None, value_serde: Any = None, *, name: str | None = None) -> Grouped:
        return Grouped(name=name, key_serde=key_serde, value_serde=value_serde)

    def with_name(self, name: str) -> Grouped:
        return replace(self, name=name)

    def with_key_serde(self, serde: Any) -> Grouped:
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Any) -> Grouped:
        return replace(self, value_serde=serde)


@dataclass(frozen=True)
class Materialized:
    """How a KTable / aggregation result is stored.

    ``name`` (or ``store_supplier``'s name) makes the store queryable under that
    name. ``caching`` (on by default, as in Kafka) puts the store behind the
    task's record cache (KIP-63, :mod:`kspark.state.internals.cache`): updates
    are forwarded and logged when the task commits or the cache evicts, the
    last one per key. The test driver commits after every record, as Kafka's
    does, so there caching shows only in a few edge cases (e.g. a delete of a
    key never in a table is not forwarded); with batched commits (the Spark
    runner commits once per micro-batch) it collapses updates.
    ``statestore.cache.max.bytes = 0`` removes the caching layers. ``retention``
    applies to window and session stores.
    """

    name: str | None = None
    key_serde: Any = None
    value_serde: Any = None
    retention: int | timedelta | None = None
    caching: bool = True
    logging: bool = True
    log_config: dict[str, str] | None = None
    store_supplier: Any = None
    # KIP-954: the DSL store suppliers of a store without a supplier of its own (None: the
    # ``dsl.store.suppliers.class`` of StreamsBuilder.build(props), else ROCKS_DB)
    dsl_store_suppliers: Any = None

    class StoreType(Enum):
        """Kafka's ``Materialized.StoreType``: the built-in DSL store suppliers by name."""

        ROCKS_DB = "rocks_db"
        IN_MEMORY = "in_memory"

        @property
        def delegate(self) -> DslStoreSuppliers:
            return (
                BuiltInDslStoreSuppliers.ROCKS_DB
                if self.value == "rocks_db"
                else BuiltInDslStoreSuppliers.IN_MEMORY
            )

    def __post_init__(self) -> None:
        if self.store_supplier is not None and self.dsl_store_suppliers is not None:
            raise ValueError("Cannot set store type when store supplier is pre-configured.")
        if self.dsl_store_suppliers is not None:
            suppliers = resolve_dsl_store_suppliers(self.dsl_store_suppliers, "Materialized store type")
            object.__setattr__(self, "dsl_store_suppliers", suppliers)
        if self.store_supplier is not None and self.name is None:
            object.__setattr__(self, "name", self.store_supplier.name)
        _validate_name(self.name, "Materialized")
        if self.retention is not None:
            ms = to_millis(self.retention, "Materialized retention")
            if ms < 0:
                raise ValueError("Retention must not be negative.")

    @staticmethod
    def as_(name_or_supplier: Any) -> Materialized:
        """A store name, a store supplier, or DSL store suppliers (``Materialized.StoreType`` or a
        ``DslStoreSuppliers``: the store type, its name generated)."""
        if isinstance(name_or_supplier, str):
            return Materialized(name=name_or_supplier)
        if name_or_supplier is None:
            raise ValueError("Materialized.as_ needs a store name or a store supplier, got None")
        if isinstance(name_or_supplier, Materialized.StoreType | DslStoreSuppliers):
            return Materialized(dsl_store_suppliers=name_or_supplier)
        return Materialized(store_supplier=name_or_supplier)

    def with_store_type(self, store_type: Any) -> Materialized:
        """The DSL store suppliers for this store (``Materialized.StoreType.ROCKS_DB`` /
        ``IN_MEMORY``, ``"rocks_db"`` / ``"in_memory"``, or a ``DslStoreSuppliers``); not with a
        store supplier of its own (Kafka's error)."""
        if store_type is None:
            raise ValueError("store type can't be null")
        return replace(self, dsl_store_suppliers=store_type)

    @staticmethod
    def with_(key_serde: Any = None, value_serde: Any = None) -> Materialized:
        return Materialized(key_serde=key_serde, value_serde=value_serde)

    def with_key_serde(self, serde: Any) -> Materialized:
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Any) -> Materialized:
        return replace(self, value_serde=serde)

    def with_retention(self, retention: int | timedelta) -> Materialized:
        return replace(self, retention=retention)

    def with_caching_enabled(self) -> Materialized:
        return replace(self, caching=True)

    def with_caching_disabled(self) -> Materialized:
        return replace(self, caching=False)

    def with_logging_enabled(self, config: dict[str, str] | None = None) -> Materialized:
        return replace(self, logging=True, log_config=dict(config or {}))

    def with_logging_disabled(self) -> Materialized:
        return replace(self, logging=False, log_config=None)

    def retention_ms(self) -> int | None:
        return None if self.retention is None else to_millis(self.retention, "Materialized retention")


@dataclass(frozen=True)
class Joined:
    """Serdes and name of a stream-table join (``grace_period`` for versioned tables)."""

    key_serde: Any = None
    value_serde: Any = None
    other_value_serde: Any = None
    name: str | None = None
    grace_period: int | timedelta | None = None

    def __post_init__(self) -> None:
        _validate_name(self.name, "Joined")

    @staticmethod
    def with_(
        key_serde: Any = None,
        value_serde: Any = None,
        other_value_serde: Any = None,
        *,
        name: str | None = None,
    ) -> Joined:
        return Joined(
            key_serde=key_serde, value_serde=value_serde, other_value_serde=other_value_serde, name=name
        )

    @staticmethod
    def key_serde_(serde: Any) -> Joined:
        return Joined(key_serde=serde)

    @staticmethod
    def value_serde_(serde: Any) -> Joined:
        return Joined(value_serde=serde)

    @staticmethod
    def other_value_serde_(serde: Any) -> Joined:
        return Joined(other_value_serde=serde)

    @staticmethod
    def grace_period_(grace: int | timedelta) -> Joined:
        """A ``Joined`` with only a grace period (stream-table joins of versioned tables, KIP-914)."""
        return Joined(grace_period=grace)

    @staticmethod
    def as_(name: str) -> Joined:
        return Joined(name=name)

    def with_name(self, name: str) -> Joined:
        return replace(self, name=name)

    def with_key_serde(self, serde: Any) -> Joined:
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Any) -> Joined:
        return replace(self, value_serde=serde)

    def with_other_value_serde(self, serde: Any) -> Joined:
        return replace(self, other_value_serde=serde)

    def with_grace_period(self, grace: int | timedelta) -> Joined:
        return replace(self, grace_period=grace)


@dataclass(frozen=True)
class StreamJoined:
    """Serdes, names and store suppliers of a windowed stream-stream join."""

    key_serde: Any = None
    value_serde: Any = None
    other_value_serde: Any = None
    name: str | None = None
    store_name: str | None = None
    this_store_supplier: Any = None
    other_store_supplier: Any = None
    logging: bool = True
    log_config: dict[str, str] | None = None
    # KIP-954: the suppliers of the join's stores that no store supplier above gives
    dsl_store_suppliers: Any = None

    def __post_init__(self) -> None:
        _validate_name(self.name, "StreamJoined")
        _validate_name(self.store_name, "StreamJoined store")
        if self.dsl_store_suppliers is not None:
            suppliers = resolve_dsl_store_suppliers(
                self.dsl_store_suppliers, "StreamJoined DSL store suppliers"
            )
            object.__setattr__(self, "dsl_store_suppliers", suppliers)

    @staticmethod
    def with_(key_serde: Any = None, value_serde: Any = None, other_value_serde: Any = None) -> StreamJoined:
        """Serdes, or (Kafka's ``StreamJoined.with(DslStoreSuppliers)``) DSL store suppliers alone."""
        if isinstance(key_serde, DslStoreSuppliers | Materialized.StoreType):
            if value_serde is not None or other_value_serde is not None:
                raise ValueError("StreamJoined.with_: DSL store suppliers come alone, without serdes")
            return StreamJoined(dsl_store_suppliers=key_serde)
        return StreamJoined(key_serde=key_serde, value_serde=value_serde, other_value_serde=other_value_serde)

    @staticmethod
    def as_(store_name: str) -> StreamJoined:
        return StreamJoined(store_name=store_name)

    def with_name(self, name: str) -> StreamJoined:
        return replace(self, name=name)

    def with_store_name(self, store_name: str) -> StreamJoined:
        return replace(self, store_name=store_name)

    def with_key_serde(self, serde: Any) -> StreamJoined:
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Any) -> StreamJoined:
        return replace(self, value_serde=serde)

    def with_other_value_serde(self, serde: Any) -> StreamJoined:
        return replace(self, other_value_serde=serde)

    def with_dsl_store_suppliers(self, dsl_store_suppliers: Any) -> StreamJoined:
        """The store suppliers of the join's stores not given by ``with_this_store_supplier`` /
        ``with_other_store_supplier`` (``BuiltInDslStoreSuppliers.IN_MEMORY``, ``"in_memory"``...)."""
        if dsl_store_suppliers is None:
            raise ValueError("store type can't be null")
        return replace(self, dsl_store_suppliers=dsl_store_suppliers)

    def with_this_store_supplier(self, supplier: Any) -> StreamJoined:
        return replace(self, this_store_supplier=supplier)

    def with_other_store_supplier(self, supplier: Any) -> StreamJoined:
        return replace(self, other_store_supplier=supplier)

    def with_logging_enabled(self, config: dict[str, str] | None = None) -> StreamJoined:
        return replace(self, logging=True, log_config=dict(config or {}))

    def with_logging_disabled(self) -> StreamJoined:
        return replace(self, logging=False, log_config=None)


@dataclass(frozen=True)
class Repartitioned:
    """Name, serdes, partition count and partitioner of an explicit ``repartition``."""

    name: str | None = None
    key_serde: Any = None
    value_serde: Any = None
    partitions: int | None = None
    partitioner: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        _validate_name(self.name, "Repartitioned")
        if self.partitions is not None and (
            isinstance(self.partitions, bool) or not isinstance(self.partitions, int) or self.partitions <= 0
        ):
            raise ValueError(f"Repartitioned partitions must be a positive int, got {self.partitions!r}")

    @staticmethod
    def as_(name: str) -> Repartitioned:
        return Repartitioned(name=name)

    @staticmethod
    def with_(key_serde: Any = None, value_serde: Any = None) -> Repartitioned:
        return Repartitioned(key_serde=key_serde, value_serde=value_serde)

    @staticmethod
    def number_of_partitions(partitions: int) -> Repartitioned:
        return Repartitioned(partitions=partitions)

    @staticmethod
    def stream_partitioner(partitioner: Callable[..., Any]) -> Repartitioned:
        return Repartitioned(partitioner=partitioner)

    def with_name(self, name: str) -> Repartitioned:
        return replace(self, name=name)

    def with_number_of_partitions(self, partitions: int) -> Repartitioned:
        return replace(self, partitions=partitions)

    def with_key_serde(self, serde: Any) -> Repartitioned:
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Any) -> Repartitioned:
        return replace(self, value_serde=serde)

    def with_stream_partitioner(self, partitioner: Callable[..., Any]) -> Repartitioned:
        return replace(self, partitioner=partitioner)


@dataclass(frozen=True)
class Branched:
    """One branch of ``split()``: its name suffix and what to do with the branch stream.

    ``chain_function`` maps the branch ``KStream`` to another ``KStream`` (the
    result is what the returned dict holds, ``None`` leaves the branch out);
    ``chain_consumer`` consumes the branch (the dict then holds no entry for
    it, as in Kafka Streams).
    """

    name: str | None = None
    chain_function: Callable[[Any], Any] | None = None
    chain_consumer: Callable[[Any], None] | None = None

    def __post_init__(self) -> None:
        # A branch name is only a suffix; the full name is validated when the processor is named.
        if self.name is not None and not isinstance(self.name, str):
            raise TypeError(f"Branched name must be a str, got {self.name!r}")
        if self.chain_function is not None and self.chain_consumer is not None:
            raise ValueError("Branched takes either a chain function or a chain consumer, not both")

    @staticmethod
    def as_(name: str) -> Branched:
        return Branched(name=name)

    @staticmethod
    def with_function(chain: Callable[[Any], Any], name: str | None = None) -> Branched:
        if chain is None:
            raise ValueError("chain function can't be None")
        return Branched(name=name, chain_function=chain)

    @staticmethod
    def with_consumer(chain: Callable[[Any], None], name: str | None = None) -> Branched:
        if chain is None:
            raise ValueError("chain consumer can't be None")
        return Branched(name=name, chain_consumer=chain)

    def with_name(self, name: str) -> Branched:
        return replace(self, name=name)


@dataclass(frozen=True)
class Printed:
    """Where and how ``KStream.print`` writes: ``to`` is ``"sysout"`` or a file path."""

    to: str = "sysout"
    label: str | None = None
    mapper: Callable[[Any, Any], str] | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        _validate_name(self.name, "Printed")

    @staticmethod
    def to_sys_out() -> Printed:
        return Printed()

    @staticmethod
    def to_file(path: str) -> Printed:
        if not path:
            raise ValueError("Printed file path can't be empty")
        return Printed(to=path)

    def with_label(self, label: str) -> Printed:
        return replace(self, label=label)

    def with_key_value_mapper(self, mapper: Callable[[Any, Any], str]) -> Printed:
        return replace(self, mapper=mapper)

    def with_name(self, name: str) -> Printed:
        return replace(self, name=name)
