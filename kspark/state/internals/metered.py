"""Typed store layers: serialize keys and values around a bytes store (Kafka's ``Metered*Store``).

This is the outermost layer a processor gets from ``context.get_state_store``.
It resolves serdes (``None`` = the app's default serde, taken from
``context.key_serde()`` / ``context.value_serde()`` at ``init``), refuses
``None`` keys, converts bytes iterators into typed ``KeyValue`` iterators
lazily, and raises ``InvalidStateStoreException`` when used while closed.
Serializers are called with the changelog topic name
``<application.id>-<store>-changelog``, as Kafka's ``StateSerdes`` does.

Timestamped stores hold :class:`ValueAndTimestamp`; their values are stored
as Kafka's ``ValueAndTimestampSerializer`` writes them: the 8-byte big-endian
timestamp, then the plain value bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from kspark.errors import ConfigException, InvalidStateStoreException, SerializationException
from kspark.key_value import KeyValue
from kspark.kstream.windowed import Windowed
from kspark.processor.internals.latency import LatencyStats
from kspark.serde.api import Deserializer, Serde, Serializer
from kspark.serde.primitives import WrapperSerde
from kspark.serde.serdes import Serdes
from kspark.state.api import (
    KeyValueIterator,
    KeyValueStore,
    SessionStore,
    StateStore,
    ValueAndTimestamp,
    WindowStore,
)
from kspark.state.internals.cache import configured_cache_max_bytes
from kspark.state.internals.caching import CachingLayer
from kspark.state.internals.change_logging import WrappedStateStore
from kspark.state.internals.iterators import MappedKeyValueIterator
from kspark.state.internals.store_metrics import instrument, recording_debug

if TYPE_CHECKING:
    from kspark.processor.api import ProcessorContext

__all__ = [
    "ValueAndTimestampSerializer",
    "ValueAndTimestampDeserializer",
    "ValueAndTimestampSerde",
    "MeteredKeyValueStore",
    "MeteredTimestampedKeyValueStore",
    "MeteredWindowStore",
    "MeteredTimestampedWindowStore",
    "MeteredSessionStore",
    "innermost",
    "RestoreRecord",
    "FlushListener",
]

_TS = struct.Struct(">q")

RestoreRecord = tuple[bytes, bytes | None, int]
"""A changelog record handed to a restore callback: (key bytes, value bytes, record timestamp)."""

FlushListener = Callable[[Any, Any, Any, int, Any], None]
"""Called for each entry a caching store flushes: ``(key, new value, old value, timestamp, headers)``,
typed (``Windowed`` keys for window and session stores); the old value is ``None`` unless old
values were asked for."""


class ValueAndTimestampSerializer(Serializer[ValueAndTimestamp[Any]]):
    """8-byte big-endian timestamp followed by the inner value's bytes."""

    def __init__(self, inner: Serializer[Any]) -> None:
        self.inner = inner

    def serialize(self, topic: str | None, data: ValueAndTimestamp[Any] | None) -> bytes | None:
        if data is None:
            return None
        if not isinstance(data, ValueAndTimestamp):
            raise SerializationException(
                f"ValueAndTimestampSerializer expects a ValueAndTimestamp, got {type(data).__name__}"
            )
        raw = self.inner.serialize(topic, data.value)
        if raw is None:
            return None
        return _TS.pack(data.timestamp) + raw

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        self.inner.configure(configs, is_key)


class ValueAndTimestampDeserializer(Deserializer[ValueAndTimestamp[Any]]):
    def __init__(self, inner: Deserializer[Any]) -> None:
        self.inner = inner

    def deserialize(self, topic: str | None, data: bytes | None) -> ValueAndTimestamp[Any] | None:
        if data is None:
            return None
        if len(data) < 8:
            raise SerializationException(
                f"ValueAndTimestampDeserializer needs at least 8 bytes, got {len(data)}"
            )
        value = self.inner.deserialize(topic, data[8:])
        # ValueAndTimestamp.make inlined (one call less per read of a timestamped store)
        return None if value is None else ValueAndTimestamp(value, _TS.unpack_from(data, 0)[0])

    def configure(self, configs: dict[str, Any], is_key: bool) -> None:
        self.inner.configure(configs, is_key)


class ValueAndTimestampSerde(WrapperSerde[ValueAndTimestamp[Any]]):
    """The serde of timestamped stores' values (Kafka's ``ValueAndTimestampSerde``)."""

    def __init__(self, inner: Serde[Any]) -> None:
        super().__init__(
            ValueAndTimestampSerializer(inner.serializer()),
            ValueAndTimestampDeserializer(inner.deserializer()),
        )
        self.inner = inner


def innermost(store: Any) -> Any:
    """The bytes store at the bottom of a layered store."""
    while hasattr(store, "wrapped"):
        store = store.wrapped
    return store


def _open_check(wrapped: Any) -> Callable[[], bool]:
    """``wrapped.is_open``, taken from the first layer at or below ``wrapped`` that does not just
    ask the layer below it (the caching and change-logging layers ask)."""
    layer = wrapped
    while type(layer).is_open is WrappedStateStore.is_open:
        layer = layer.wrapped
    is_open: Callable[[], bool] = layer.is_open
    return is_open


def _serializing(serde: Serde[Any]) -> Callable[[str | None, Any], bytes | None]:
    """``serde.serializer().serialize``, the serializer taken once when the serde always hands out
    the same one (a ``WrapperSerde``: every built-in serde); another serde is asked on every call,
    as Kafka's ``StateSerdes`` asks it."""
    if type(serde).serializer is WrapperSerde.serializer:
        serialize: Callable[[str | None, Any], bytes | None] = serde.serializer().serialize
        return serialize

    def per_call(topic: str | None, data: Any) -> bytes | None:
        return serde.serializer().serialize(topic, data)

    return per_call


def _deserializing(serde: Serde[Any]) -> Callable[[str | None, bytes], Any]:
    """``serde.deserializer().deserialize``, as :func:`_serializing`."""
    if type(serde).deserializer is WrapperSerde.deserializer:
        deserialize: Callable[[str | None, bytes], Any] = serde.deserializer().deserialize
        return deserialize

    def per_call(topic: str | None, data: bytes) -> Any:
        return serde.deserializer().deserialize(topic, data)

    return per_call


def _uninitialized(topic: str | None, data: Any) -> Any:
    raise AssertionError("the store's serdes are resolved by init")


def _resolve(serde: Any, default: Callable[[], Any], what: str, store: str) -> Serde[Any]:
    if serde is None:
        serde = default()
    if isinstance(serde, str):
        serde = Serdes.from_name(serde)
    if serde is None:
        raise ConfigException(
            f"No {what} serde for store {store}: specify one or set default.{what}.serde in the config"
        )
    if not isinstance(serde, Serde):
        raise ConfigException(f"The {what} serde of store {store} is not a Serde: {serde!r}")
    return serde


class _MeteredStore(StateStore):
    """What every typed layer shares: serdes, lifecycle and the closed check."""

    _timestamped = False
    # method -> Kafka Streams' operation name, timed at the DEBUG recording level (store_metrics.py)
    _metered_ops: ClassVar[Mapping[str, str]] = {"flush": "flush"}

    def __init__(
        self, wrapped: Any, key_serde: Serde[Any] | str | None, value_serde: Serde[Any] | str | None
    ) -> None:
        self.wrapped = wrapped
        self._key_serde_spec = key_serde
        self._value_serde_spec = value_serde
        self.key_serde: Serde[Any] | None = None
        self.value_serde: Serde[Any] | None = None
        self._topic: str | None = None
        self._context: ProcessorContext | None = None
        self.caching_enabled = False
        # Set by the builder from its supplier (Kafka's metricsScope): the state-id tag's prefix.
        self.metrics_scope = "unknown"
        # Each timed operation's calls since a runner last took them (empty at the INFO level).
        self.op_stats: dict[str, LatencyStats] = {}
        # What every operation looked up through the layers and the serdes, taken once. Measured on
        # W4's table after bench.engine's load, a get went from 6.5 µs to 4.1 µs (with caching.py
        # taking its namespace once). None of them refers back to this store: no reference cycle.
        self._open = _open_check(wrapped)
        self._serialize_key: Callable[[str | None, Any], bytes | None] = _uninitialized
        self._deserialize_value: Callable[[str | None, bytes], Any] = _uninitialized

    @property
    def name(self) -> str:
        name: str = self.wrapped.name
        return name

    def init(self, context: ProcessorContext, root: StateStore) -> None:
        self._context = context
        key_serde = _resolve(self._key_serde_spec, context.key_serde, "key", self.name)
        value_serde = _resolve(self._value_serde_spec, context.value_serde, "value", self.name)
        if self._timestamped:
            value_serde = ValueAndTimestampSerde(value_serde)
        self.key_serde, self.value_serde = key_serde, value_serde
        self._serialize_key = _serializing(key_serde)
        self._deserialize_value = _deserializing(value_serde)
        self._topic = f"{context.application_id()}-{self.name}-changelog"
        if isinstance(self.wrapped, CachingLayer) and configured_cache_max_bytes(context) == 0:
            # Kafka strips every caching layer when the cache size is 0 (InternalTopologyBuilder's
            # rewriteTopology): writes then reach the store, and the forwarders forward, at once
            self.wrapped = self.wrapped.wrapped
            self.caching_enabled = False
            self._open = _open_check(self.wrapped)
        self.wrapped.init(context, root)
        register = getattr(context, "register", None)
        if callable(register):
            register(root, self._restore)
        if not self.op_stats and recording_debug(context.app_configs()):
            self.op_stats = instrument(self, self._metered_ops)

    def _restore(self, records: Iterable[RestoreRecord]) -> None:
        """Apply changelog records to the bytes store below the change-logging layer, then tell
        the layers above it which changelog keys came back (``restored_keys``)."""
        records = list(records)
        target = innermost(self.wrapped)
        if self._timestamped:
            target.restore((k, None if v is None else _TS.pack(ts) + v) for k, v, ts in records)
        else:
            target.restore((k, v) for k, v, _ in records)
        layer = self.wrapped
        keys: list[bytes] | None = None
        while layer is not target:
            restored_keys = getattr(type(layer), "restored_keys", None)
            if callable(restored_keys):
                if keys is None:
                    keys = [k for k, v, _ in records if v is not None]
                restored_keys(layer, keys)
            layer = layer.wrapped

    def flush(self) -> None:
        self.wrapped.flush()

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool) -> bool:
        """Have a caching layer below call ``listener`` with typed flushed entries (Kafka's
        ``setFlushListener``); False, and nothing registered, when the store does not cache."""
        setter = getattr(self.wrapped, "set_flush_listener", None)
        if not callable(setter):
            return False

        def typed(raw_key: Any, new: bytes | None, old: bytes | None, timestamp: int, headers: Any) -> None:
            listener(
                self._flushed_key(raw_key), self.value_from(new), self.value_from(old), timestamp, headers
            )

        return bool(setter(typed, send_old_values))

    def _flushed_key(self, raw_key: Any) -> Any:
        return self.key_from(raw_key)

    def close(self) -> None:
        self.wrapped.close()

    def persistent(self) -> bool:
        result: bool = self.wrapped.persistent()
        return result

    def is_open(self) -> bool:
        result: bool = self.wrapped.is_open()
        return result

    def _check_open(self) -> None:
        # is_open() as the layers below answer it, without the calls through them
        if not self._open():
            raise InvalidStateStoreException(f"Store {self.name} is currently closed.")

    def raw_key(self, key: Any) -> bytes:
        if key is None:
            raise ValueError("key cannot be null")
        raw = self._serialize_key(self._topic, key)
        if raw is None:
            raise SerializationException(f"The key serde of store {self.name} serialized {key!r:.60} to None")
        return raw

    def _raw_key_or_none(self, key: Any) -> bytes | None:
        return None if key is None else self.raw_key(key)

    def raw_value(self, value: Any) -> bytes | None:
        if value is None:
            return None
        assert self.value_serde is not None
        return self.value_serde.serializer().serialize(self._topic, value)

    def key_from(self, raw: bytes) -> Any:
        assert self.key_serde is not None
        return self.key_serde.deserializer().deserialize(self._topic, raw)

    def value_from(self, raw: bytes | None) -> Any:
        if raw is None:
            return None
        return self._deserialize_value(self._topic, raw)

    def _windowed_key_from(self, raw: Windowed[bytes]) -> Windowed[Any]:
        return Windowed(self.key_from(raw.key), raw.window)

    def _typed(
        self, it: KeyValueIterator[Any, bytes], key_fn: Callable[[Any], Any]
    ) -> KeyValueIterator[Any, Any]:
        return MappedKeyValueIterator(it, key_fn, self.value_from, self.name)


class MeteredKeyValueStore(_MeteredStore, KeyValueStore[Any, Any]):
    """The typed key-value store processors use."""

    _metered_ops: ClassVar[Mapping[str, str]] = {
        "get": "get",
        "put": "put",
        "put_if_absent": "put-if-absent",
        "put_all": "put-all",
        "delete": "delete",
        "range": "range",
        "reverse_range": "range",
        "all": "all",
        "reverse_all": "all",
        "prefix_scan": "prefix-scan",
        "flush": "flush",
    }

    def get(self, key: Any) -> Any:
        self._check_open()
        # value_from inlined: a stream-table join calls this once a record
        raw = self.wrapped.get(self.raw_key(key))
        return None if raw is None else self._deserialize_value(self._topic, raw)

    def put(self, key: Any, value: Any) -> None:
        self._check_open()
        self.wrapped.put(self.raw_key(key), self.raw_value(value))

    def put_if_absent(self, key: Any, value: Any) -> Any:
        self._check_open()
        return self.value_from(self.wrapped.put_if_absent(self.raw_key(key), self.raw_value(value)))

    def put_all(self, entries: Iterable[KeyValue[Any, Any] | tuple[Any, Any]]) -> None:
        self._check_open()
        self.wrapped.put_all([(self.raw_key(k), self.raw_value(v)) for k, v in entries])

    def delete(self, key: Any) -> Any:
        self._check_open()
        return self.value_from(self.wrapped.delete(self.raw_key(key)))

    def range(self, from_key: Any, to_key: Any) -> KeyValueIterator[Any, Any]:
        self._check_open()
        it = self.wrapped.range(self._raw_key_or_none(from_key), self._raw_key_or_none(to_key))
        return self._typed(it, self.key_from)

    def reverse_range(self, from_key: Any, to_key: Any) -> KeyValueIterator[Any, Any]:
        self._check_open()
        it = self.wrapped.reverse_range(self._raw_key_or_none(from_key), self._raw_key_or_none(to_key))
        return self._typed(it, self.key_from)

    def all(self) -> KeyValueIterator[Any, Any]:
        self._check_open()
        return self._typed(self.wrapped.all(), self.key_from)

    def reverse_all(self) -> KeyValueIterator[Any, Any]:
        self._check_open()
        return self._typed(self.wrapped.reverse_all(), self.key_from)

    def prefix_scan(self, prefix: Any, prefix_key_serializer: Any) -> KeyValueIterator[Any, Any]:
        self._check_open()
        if prefix is None:
            raise ValueError("prefix cannot be null")
        if prefix_key_serializer is None:
            raise ValueError("prefixKeySerializer cannot be null")
        serializer = prefix_key_serializer
        if isinstance(serializer, Serde):
            serializer = serializer.serializer()
        raw = serializer.serialize(self._topic, prefix)
        return self._typed(self.wrapped.prefix_scan(raw), self.key_from)

    def approximate_num_entries(self) -> int:
        self._check_open()
        result: int = self.wrapped.approximate_num_entries()
        return result


class MeteredTimestampedKeyValueStore(MeteredKeyValueStore):
    """A key-value store whose values are ``ValueAndTimestamp``."""

    _timestamped = True


class MeteredWindowStore(_MeteredStore, WindowStore[Any, Any]):
    """The typed window store processors use."""

    _metered_ops: ClassVar[Mapping[str, str]] = {
        "put": "put",
        **dict.fromkeys(
            (
                "fetch",
                "backward_fetch",
                "fetch_range",
                "backward_fetch_range",
                "fetch_all",
                "backward_fetch_all",
                "all",
                "backward_all",
            ),
            "fetch",
        ),
        "flush": "flush",
    }

    def _flushed_key(self, raw_key: Any) -> Any:
        return self._windowed_key_from(raw_key)

    def put(self, key: Any, value: Any, window_start_timestamp: int) -> None:
        self._check_open()
        self.wrapped.put(self.raw_key(key), self.raw_value(value), window_start_timestamp)

    def fetch(self, key: Any, time_from: int, time_to: int | None = None) -> Any:
        self._check_open()
        if time_to is None:
            return self.value_from(self.wrapped.fetch_window(self.raw_key(key), time_from))
        return self._typed(self.wrapped.fetch(self.raw_key(key), time_from, time_to), _identity)

    def backward_fetch(self, key: Any, time_from: int, time_to: int) -> KeyValueIterator[int, Any]:
        self._check_open()
        return self._typed(self.wrapped.backward_fetch(self.raw_key(key), time_from, time_to), _identity)

    def fetch_range(
        self, key_from: Any, key_to: Any, time_from: int, time_to: int
    ) -> KeyValueIterator[Windowed[Any], Any]:
        self._check_open()
        it = self.wrapped.fetch_range(
            self._raw_key_or_none(key_from), self._raw_key_or_none(key_to), time_from, time_to
        )
        return self._typed(it, self._windowed_key_from)

    def backward_fetch_range(
        self, key_from: Any, key_to: Any, time_from: int, time_to: int
    ) -> KeyValueIterator[Windowed[Any], Any]:
        self._check_open()
        it = self.wrapped.backward_fetch_range(
            self._raw_key_or_none(key_from), self._raw_key_or_none(key_to), time_from, time_to
        )
        return self._typed(it, self._windowed_key_from)

    def fetch_all(self, time_from: int, time_to: int) -> KeyValueIterator[Windowed[Any], Any]:
        self._check_open()
        return self._typed(self.wrapped.fetch_all(time_from, time_to), self._windowed_key_from)

    def backward_fetch_all(self, time_from: int, time_to: int) -> KeyValueIterator[Windowed[Any], Any]:
        self._check_open()
        return self._typed(self.wrapped.backward_fetch_all(time_from, time_to), self._windowed_key_from)

    def all(self) -> KeyValueIterator[Windowed[Any], Any]:
        self._check_open()
        return self._typed(self.wrapped.all(), self._windowed_key_from)

    def backward_all(self) -> KeyValueIterator[Windowed[Any], Any]:
        self._check_open()
        return self._typed(self.wrapped.backward_all(), self._windowed_key_from)


class MeteredTimestampedWindowStore(MeteredWindowStore):
    """A window store whose values are ``ValueAndTimestamp``."""

    _timestamped = True


class MeteredSessionStore(_MeteredStore, SessionStore[Any, Any]):
    """The typed session store processors use."""

    _metered_ops: ClassVar[Mapping[str, str]] = {
        "put": "put",
        "remove": "remove",
        **dict.fromkeys(
            (
                "fetch_session",
                "fetch",
                "backward_fetch",
                "fetch_range",
                "find_sessions",
                "backward_find_sessions",
                "find_sessions_range",
                "find_sessions_by_end_time",
            ),
            "fetch",
        ),
        "flush": "flush",
    }

    def _flushed_key(self, raw_key: Any) -> Any:
        return self._windowed_key_from(raw_key)

    def put(self, session_key: Windowed[Any], aggregate: Any) -> None:
        self._check_open()
        if session_key is None:
            raise ValueError("sessionKey cannot be null")
        self.wrapped.put(
            Windowed(self.raw_key(session_key.key), session_key.window), self.raw_value(aggregate)
        )

    def remove(self, session_key: Windowed[Any]) -> None:
        self._check_open()
        if session_key is None:
            raise ValueError("sessionKey cannot be null")
        self.wrapped.remove(Windowed(self.raw_key(session_key.key), session_key.window))

    def fetch_session(self, key: Any, session_start: int, session_end: int) -> Any:
        self._check_open()
        return self.value_from(self.wrapped.fetch_session(self.raw_key(key), session_start, session_end))

    def fetch(self, key: Any) -> KeyValueIterator[Windowed[Any], Any]:
        self._check_open()
        return self._typed(self.wrapped.fetch(self.raw_key(key)), self._windowed_key_from)

    def backward_fetch(self, key: Any) -> KeyValueIterator[Windowed[Any], Any]:
        self._check_open()
        return self._typed(self.wrapped.backward_fetch(self.raw_key(key)), self._windowed_key_from)

    def fetch_range(self, key_from: Any, key_to: Any) -> KeyValueIterator[Windowed[Any], Any]:
        self._check_open()
        it = self.wrapped.fetch_range(self._raw_key_or_none(key_from), self._raw_key_or_none(key_to))
        return self._typed(it, self._windowed_key_from)

    def find_sessions(
        self, key: Any, earliest_session_end_time: int, latest_session_start_time: int
    ) -> KeyValueIterator[Windowed[Any], Any]:
        self._check_open()
        it = self.wrapped.find_sessions(
            self.raw_key(key), earliest_session_end_time, latest_session_start_time
        )
        return self._typed(it, self._windowed_key_from)

    def backward_find_sessions(
        self, key: Any, earliest_session_end_time: int, latest_session_start_time: int
    ) -> KeyValueIterator[Windowed[Any], Any]:
        self._check_open()
        it = self.wrapped.backward_find_sessions(
            self.raw_key(key), earliest_session_end_time, latest_session_start_time
        )
        return self._typed(it, self._windowed_key_from)

    def find_sessions_range(
        self, key_from: Any, key_to: Any, earliest_session_end_time: int, latest_session_start_time: int
    ) -> KeyValueIterator[Windowed[Any], Any]:
        self._check_open()
        it = self.wrapped.find_sessions_range(
            self._raw_key_or_none(key_from),
            self._raw_key_or_none(key_to),
            earliest_session_end_time,
            latest_session_start_time,
        )
        return self._typed(it, self._windowed_key_from)

    def find_sessions_by_end_time(
        self, earliest_session_end_time: int, latest_session_end_time: int
    ) -> KeyValueIterator[Windowed[Any], Any]:
        """Every key's sessions ending in ``[earliest, latest]`` (Kafka's ``findSessions(long, long)``)."""
        self._check_open()
        it = self.wrapped.find_sessions_by_end_time(earliest_session_end_time, latest_session_end_time)
        return self._typed(it, self._windowed_key_from)


def _identity(x: Any) -> Any:
    return x
