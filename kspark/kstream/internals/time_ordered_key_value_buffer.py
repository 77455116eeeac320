"""The suppression buffer: a change-logged, time-ordered store of ``Change`` values.

Mirrors Kafka's ``InMemoryTimeOrderedKeyValueChangeBuffer``. Entries are held
serialized, keyed by the serialized record key and ordered by
``(buffer time, key bytes)``; a key already buffered keeps its place
("non-resetting"). Each entry remembers the *prior* value (the old value of
the key's first buffered update), the latest old and new values and the
record context (timestamp, offset, topic, partition, headers) of the latest
update, which is restored when the entry is emitted.

Change-logging works as in Kafka: puts and evictions mark keys dirty and
``flush()`` (the task's commit) writes one changelog record per dirty key to
``<application.id>-<store>-changelog`` through ``context.log_change``: the
serialized key, and as value Kafka's version-3 layout
``<record context><prior><old><new><8-byte buffer time>`` (or a tombstone
for an evicted key). The store registers a restore callback that rebuilds
the buffer from those records, so the changelog compacted to the latest
record per key is enough to restore it.

Differences from Kafka: the changelog records carry no ``v=3`` header (the
engine's ``log_change`` has no headers; only version 3 is ever written or
read here) and take the wall-clock time as timestamp (Kafka sends them
without one, so the producer stamps them with its clock). A record context
without topic (a record forwarded from a punctuation) is written with topic
length -1, where Kafka would fail.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sortedcontainers import SortedDict

from kspark.errors import SerializationException, StreamsException
from kspark.kstream.internals.change import Change
from kspark.processor.api import Headers, ProcessorContext, Record
from kspark.processor.internals.records import ProcessorRecordContext
from kspark.serde.api import Serde
from kspark.serde.serdes import Serdes
from kspark.state.api import StateStore, StoreBuilder, ValueAndTimestamp

__all__ = [
    "BufferValue",
    "Eviction",
    "InMemoryTimeOrderedKeyValueChangeBuffer",
    "InMemoryTimeOrderedKeyValueChangeBufferBuilder",
    "WindowedKeySpec",
    "serialize_record_context",
    "deserialize_record_context",
]

_MAX_LONG = sys.maxsize
_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")
_NULL = -1
_PRIOR_DUPLICATE = -2  # Kafka's OLD_PREV_DUPLICATE_VALUE_SENTINEL: old value == prior value


def serialize_record_context(rc: ProcessorRecordContext) -> bytes:
    """Kafka's ``ProcessorRecordContext.serialize``: timestamp, offset, topic, partition, headers."""
    parts = [_LONG.pack(rc.timestamp), _LONG.pack(rc.offset)]
    if rc.topic is None:
        parts.append(_INT.pack(_NULL))
    else:
        topic = rc.topic.encode()
        parts += [_INT.pack(len(topic)), topic]
    headers = list(rc.headers)
    parts += [_INT.pack(rc.partition), _INT.pack(len(headers))]
    for h in headers:
        key = h.key.encode()
        parts += [_INT.pack(len(key)), key]
        parts += [_INT.pack(_NULL)] if h.value is None else [_INT.pack(len(h.value)), h.value]
    return b"".join(parts)


class _Reader:
    """Sequential reads of Kafka's big-endian, size-prefixed layouts."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise SerializationException(
                f"{self.what}: truncated record ({len(self.data)} bytes, needed {self.pos + n})"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def long(self) -> int:
        value: int = _LONG.unpack(self._take(8))[0]
        return value

    def int32(self) -> int:
        value: int = _INT.unpack(self._take(4))[0]
        return value

    def array(self, size: int) -> bytes | None:
        return None if size == _NULL else self._take(size)

    def sized(self) -> bytes | None:
        return self.array(self.int32())


def deserialize_record_context(reader: _Reader) -> ProcessorRecordContext:
    timestamp = reader.long()
    offset = reader.long()
    raw_topic = reader.sized()
    partition = reader.int32()
    headers = Headers()
    for _ in range(reader.int32()):
        key = reader.sized() or b""
        headers.add(key.decode(), reader.sized())
    topic = None if raw_topic is None else raw_topic.decode()
    return ProcessorRecordContext(timestamp, offset, partition, topic, headers)


@dataclass(frozen=True)
class BufferValue:
    """One buffered entry (Kafka's ``BufferValue``): serialized values and the record context."""

    prior_value: bytes | None
    old_value: bytes | None
    new_value: bytes | None
    context: ProcessorRecordContext

    def serialize(self) -> bytes:
        """Context, prior, old (``-2`` when equal to prior), new; each value size-prefixed."""
        parts = [serialize_record_context(self.context), _sized(self.prior_value)]
        if self.old_value is None:
            parts.append(_INT.pack(_NULL))
        elif self.old_value == self.prior_value:
            parts.append(_INT.pack(_PRIOR_DUPLICATE))
        else:
            parts.append(_sized(self.old_value))
        parts.append(_sized(self.new_value))
        return b"".join(parts)

    @staticmethod
    def deserialize(reader: _Reader) -> BufferValue:
        context = deserialize_record_context(reader)
        prior = reader.sized()
        old_size = reader.int32()
        old = prior if old_size == _PRIOR_DUPLICATE else reader.array(old_size)
        return BufferValue(prior, old, reader.sized(), context)

    def resident_memory_size_estimate(self) -> int:
        """Kafka's estimate: the value bytes (old only when it differs from prior) and the context."""
        rc = self.context
        size = len(self.prior_value or b"") + len(self.new_value or b"")
        if self.old_value is not None and self.old_value != self.prior_value:
            size += len(self.old_value)
        size += 8 + 8 + (len(rc.topic) if rc.topic is not None else 0) + 4
        for h in rc.headers:
            size += len(h.key) + (len(h.value) if h.value is not None else 0)
        return size


def _sized(value: bytes | None) -> bytes:
    return _INT.pack(_NULL) if value is None else _INT.pack(len(value)) + value


def _record_size(key: bytes, value: BufferValue) -> int:
    return 8 + len(key) + value.resident_memory_size_estimate()


@dataclass(frozen=True)
class Eviction:
    """An entry leaving the buffer: deserialized key, ``Change`` and the buffered record context."""

    key: Any
    value: Change[Any]
    record_context: ProcessorRecordContext


@dataclass(frozen=True)
class WindowedKeySpec:
    """How to wrap the default key serde when the buffered keys are ``Windowed`` and no serde was given.

    ``kind`` is ``"time"`` (``window_size_ms`` needed to rebuild the window end) or ``"session"``.
    """

    kind: str
    window_size_ms: int = 0

    def wrap(self, inner: Serde[Any]) -> Serde[Any]:
        if self.kind == "session":
            return Serdes.session_windowed(inner)
        return Serdes.time_windowed(inner, self.window_size_ms)


def _resolve(serde: Any, default: Callable[[], Any], what: str, store: str) -> Serde[Any]:
    if serde is None:
        serde = default()
    if isinstance(serde, str):
        serde = Serdes.from_name(serde)
    if not isinstance(serde, Serde):
        raise StreamsException(
            f"No usable {what} serde for suppression buffer {store}: got {serde!r}; "
            f"set one on the upstream table (Materialized/Grouped) or default.{what}.serde"
        )
    return serde


class InMemoryTimeOrderedKeyValueChangeBuffer(StateStore):
    """The suppression buffer store; see the module docstring."""

    def __init__(
        self,
        name: str,
        key_serde: Any,
        value_serde: Any,
        logging_enabled: bool,
        windowed_key: WindowedKeySpec | None = None,
    ) -> None:
        self._name = name
        self._key_serde_spec = key_serde
        self._value_serde_spec = value_serde
        self._windowed_key = windowed_key
        self.logging_enabled = logging_enabled
        self._sorted: SortedDict = SortedDict()  # (buffer time, key bytes) -> BufferValue
        self._index: dict[bytes, tuple[int, bytes]] = {}
        self._dirty: dict[bytes, None] = {}  # insertion-ordered set: deterministic changelog order
        self._mem_size = 0
        self._open = False
        self._context: ProcessorContext | None = None
        self._topic = ""
        self._key_serde: Serde[Any] | None = None
        self._value_serde: Serde[Any] | None = None

    @property
    def name(self) -> str:
        return self._name

    def init(self, context: ProcessorContext, root: StateStore) -> None:
        self._context = context
        self._topic = f"{context.application_id()}-{self._name}-changelog"
        key_spec = self._key_serde_spec
        if key_spec is None and self._windowed_key is not None:
            key_spec = self._windowed_key.wrap(_resolve(None, context.key_serde, "key", self._name))
        self._key_serde = _resolve(key_spec, context.key_serde, "key", self._name)
        self._value_serde = _resolve(self._value_serde_spec, context.value_serde, "value", self._name)
        register = getattr(context, "register", None)
        if callable(register):
            register(root, self.restore_batch)
        self._open = True

    def persistent(self) -> bool:
        return False

    def is_open(self) -> bool:
        return self._open

    def close(self) -> None:
        self._open = False
        self._sorted.clear()
        self._index.clear()
        self._dirty.clear()
        self._mem_size = 0

    # ------------------------------------------------------------------ serdes
    def _serialize_key(self, key: Any) -> bytes:
        assert self._key_serde is not None
        raw = self._key_serde.serializer().serialize(self._topic, key)
        if raw is None:
            raise SerializationException(f"The key serde of suppression buffer {self._name} returned None")
        return raw

    def _serialize_value(self, value: Any) -> bytes | None:
        assert self._value_serde is not None
        return None if value is None else self._value_serde.serializer().serialize(self._topic, value)

    def _deserialize_value(self, raw: bytes | None) -> Any:
        assert self._value_serde is not None
        return None if raw is None else self._value_serde.deserializer().deserialize(self._topic, raw)

    # ------------------------------------------------------------------ writes
    def put(
        self, time: int, record: Record[Any, Change[Any]], record_context: ProcessorRecordContext
    ) -> None:
        """Buffer ``record`` (a ``Change``) at ``time``; a key already buffered keeps its place."""
        if record.value is None:
            raise ValueError("value cannot be null")
        key = self._serialize_key(record.key)
        old = self._serialize_value(record.value.old_value)
        new = self._serialize_value(record.value.new_value)
        previous = self._index.get(key)
        prior = old if previous is None else self._sorted[previous].prior_value
        self._clean_put(time, key, BufferValue(prior, old, new, record_context))
        if self.logging_enabled:
            self._dirty[key] = None

    def _clean_put(self, time: int, key: bytes, value: BufferValue) -> None:
        previous = self._index.get(key)
        if previous is None:
            sort_key = (time, key)
            self._index[key] = sort_key
            self._sorted[sort_key] = value
            self._mem_size += _record_size(key, value)
        else:
            self._mem_size += _record_size(key, value) - _record_size(key, self._sorted[previous])
            self._sorted[previous] = value

    def _remove(self, key: bytes) -> None:
        sort_key = self._index.pop(key, None)
        if sort_key is not None:
            self._mem_size -= _record_size(key, self._sorted.pop(sort_key))

    def evict_while(self, predicate: Callable[[], bool], callback: Callable[[Eviction], None]) -> None:
        """Hand the oldest entries to ``callback`` (then drop them) while ``predicate()`` holds."""
        assert self._key_serde is not None
        while self._sorted and predicate():
            (_, key), value = self._sorted.peekitem(0)
            change = Change(
                self._deserialize_value(value.new_value), self._deserialize_value(value.old_value)
            )
            typed_key = self._key_serde.deserializer().deserialize(self._topic, key)
            callback(Eviction(typed_key, change, value.context))
            self._remove(key)
            if self.logging_enabled:
                self._dirty[key] = None

    # ------------------------------------------------------------------ reads
    def min_timestamp(self) -> int:
        return self._sorted.peekitem(0)[0][0] if self._sorted else _MAX_LONG

    def num_records(self) -> int:
        return len(self._index)

    def buffer_size(self) -> int:
        return self._mem_size

    def prior_value_for_buffered(self, key: Any) -> tuple[bool, ValueAndTimestamp[Any] | None]:
        """``(True, prior)`` if ``key`` is buffered (the value before its first buffered update)."""
        sort_key = self._index.get(self._serialize_key(key))
        if sort_key is None:
            return (False, None)
        # the prior value's timestamp is unknown (Kafka: RecordQueue.UNKNOWN)
        return (True, ValueAndTimestamp.make(self._deserialize_value(self._sorted[sort_key].prior_value), -1))

    # ------------------------------------------------------------------ changelog
    def flush(self) -> None:
        if not self.logging_enabled or not self._dirty or self._context is None:
            return
        log_change = getattr(self._context, "log_change", None)
        dirty, self._dirty = self._dirty, {}
        if not callable(log_change):
            return
        now = self._context.current_system_time_ms()
        for key in dirty:
            sort_key = self._index.get(key)
            if sort_key is None:
                log_change(self._name, key, None, now)
            else:
                value = self._sorted[sort_key].serialize() + _LONG.pack(sort_key[0])
                log_change(self._name, key, value, now)

    def restore_batch(self, records: Iterable[tuple[bytes, bytes | None, int]]) -> None:
        """Apply changelog records ``(key, value, timestamp)``: version-3 values or tombstones."""
        for key, value, _ in records:
            if value is None:
                self._remove(key)
                continue
            reader = _Reader(value, f"suppression buffer {self._name} changelog")
            buffered = BufferValue.deserialize(reader)
            time = reader.long()
            if reader.pos != len(value):
                raise SerializationException(
                    f"suppression buffer {self._name} changelog: {len(value) - reader.pos} trailing bytes"
                )
            self._clean_put(time, key, buffered)


class InMemoryTimeOrderedKeyValueChangeBufferBuilder(StoreBuilder[Any, Any]):
    """Builds the suppression buffer; logging is on unless the ``BufferConfig`` disabled it."""

    def __init__(
        self,
        name: str,
        key_serde: Any,
        value_serde: Any,
        windowed_key: WindowedKeySpec | None = None,
    ) -> None:
        self._name = name
        self._key_serde = key_serde
        self._value_serde = value_serde
        self._windowed_key = windowed_key
        self._logging = True
        self._log_config: dict[str, str] = {}

    @property
    def name(self) -> str:
        return self._name

    def build(self) -> InMemoryTimeOrderedKeyValueChangeBuffer:
        return InMemoryTimeOrderedKeyValueChangeBuffer(
            self._name, self._key_serde, self._value_serde, self._logging, self._windowed_key
        )

    def with_caching_enabled(self) -> InMemoryTimeOrderedKeyValueChangeBufferBuilder:
        # the buffer is never cached (Kafka: a no-op)
        return self

    def with_caching_disabled(self) -> InMemoryTimeOrderedKeyValueChangeBufferBuilder:
        return self

    def with_logging_enabled(
        self, config: dict[str, str] | None = None
    ) -> InMemoryTimeOrderedKeyValueChangeBufferBuilder:
        self._logging = True
        self._log_config = dict(config or {})
        return self

    def with_logging_disabled(self) -> InMemoryTimeOrderedKeyValueChangeBufferBuilder:
        self._logging = False
        return self

    def logging_enabled(self) -> bool:
        return self._logging

    def log_config(self) -> dict[str, str]:
        return dict(self._log_config) if self._logging else {}
