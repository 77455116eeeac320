"""The buffer of a stream-table join with a grace period (KIP-914): stream records held in time order.

Mirrors Kafka's ``RocksDBTimeOrderedKeyValueBuffer`` as the join uses it. A
record is buffered unless it is older than the buffer's observed stream time
(the largest timestamp buffered so far) minus the grace period, in which case
``put`` returns False and the join handles it at once. After each put the
join evicts, in order of (timestamp, serialized key, sequence number), every
record whose timestamp is at most observed stream time minus grace, and joins
it with the table as of its own timestamp.

Keys and values are serialized with the application's default serdes, as
Kafka's buffer takes them from the task context (``setSerdesIfNull``); the
serializers see the join processor's name as topic. Every put is change-logged
at once under Kafka's store key (8-byte timestamp, key bytes, 4-byte sequence
number) with the value layout of Kafka's ``BufferValue`` (no prior or old
value, the record context) followed by an 8-byte buffer time of 0; every
eviction logs a tombstone. Restore rebuilds the buffer and its observed stream
time from those records; sequence numbers continue above the highest restored
one so that a restored entry is never overwritten (Kafka restarts them at 0).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import Any, Self

from sortedcontainers import SortedDict

from kspark.errors import SerializationException, StreamsException
from kspark.kstream.internals.time_ordered_key_value_buffer import BufferValue, _Reader
from kspark.processor.api import ProcessorContext, Record
from kspark.processor.internals.records import ProcessorRecordContext
from kspark.serde.api import Serde
from kspark.serde.serdes import Serdes
from kspark.state.api import StateStore, StoreBuilder

__all__ = ["StreamTableJoinBuffer", "StreamTableJoinBufferBuilder"]

_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")
_INT_MAX = 0x7FFFFFFF
_NO_TIMESTAMP = -1

Evicted = Callable[[Any, Any, ProcessorRecordContext], None]


def _default_serde(get: Callable[[], Any], what: str, store: str) -> Serde[Any]:
    serde = get()
    if isinstance(serde, str):
        serde = Serdes.from_name(serde)
    if not isinstance(serde, Serde):
        raise StreamsException(
            f"The stream-table join buffer {store} serializes the stream's records with the default "
            f"{what} serde, and none is usable ({serde!r}): set default.{what}.serde in the config"
        )
    return serde


class StreamTableJoinBuffer(StateStore):
    """The time-ordered buffer of stream records of one stream-table join task."""

    def __init__(self, name: str, grace_ms: int, topic: str, logging_enabled: bool) -> None:
        self._name = name
        self.grace_ms = grace_ms
        self._topic = topic
        self.logging_enabled = logging_enabled
        self.observed_stream_time = _NO_TIMESTAMP
        self._sorted: SortedDict = SortedDict()  # (timestamp, key bytes, seqnum) -> (value bytes, context)
        self._seqnum = 0
        self._open = False
        self._context: ProcessorContext | None = None
        self._key_serde: Serde[Any] | None = None
        self._value_serde: Serde[Any] | None = None

    @property
    def name(self) -> str:
        return self._name

    def init(self, context: ProcessorContext, root: StateStore) -> None:
        self._context = context
        self._key_serde = _default_serde(context.key_serde, "key", self._name)
        self._value_serde = _default_serde(context.value_serde, "value", self._name)
        register = getattr(context, "register", None)
        if callable(register):
            register(root, self.restore_batch)
        self._open = True

    def persistent(self) -> bool:
        return True

    def is_open(self) -> bool:
        return self._open

    def close(self) -> None:
        self._open = False
        self._sorted.clear()
        self.observed_stream_time = _NO_TIMESTAMP

    def num_records(self) -> int:
        return len(self._sorted)

    def put(self, record: Record[Any, Any], record_context: ProcessorRecordContext) -> bool:
        """Buffer ``record``; False (nothing buffered) when it is older than the grace period."""
        if record.value is None:
            raise ValueError("value cannot be null")
        if record.key is None:
            raise ValueError("key cannot be null")
        if self.observed_stream_time - self.grace_ms > record.timestamp:
            return False
        assert self._key_serde is not None and self._value_serde is not None
        key = self._key_serde.serializer().serialize(self._topic, record.key)
        value = self._value_serde.serializer().serialize(self._topic, record.value)
        if key is None or value is None:
            raise SerializationException(
                f"The default serdes serialized a record of buffer {self._name} to None"
            )
        self._seqnum = (self._seqnum + 1) & _INT_MAX
        self._sorted[(record.timestamp, key, self._seqnum)] = (value, record_context)
        self.observed_stream_time = max(self.observed_stream_time, record.timestamp)
        if self.logging_enabled:
            buffered = BufferValue(None, None, value, record_context).serialize() + _LONG.pack(0)
            self._log(self._store_key(record.timestamp, key, self._seqnum), buffered, record.timestamp)
        return True

    def evict_expired(self, callback: Evicted) -> None:
        """Hand every record at or before observed stream time minus grace to ``callback``
        (deserialized key and value, buffered record context), oldest first, and drop it."""
        assert self._key_serde is not None and self._value_serde is not None
        horizon = self.observed_stream_time - self.grace_ms
        while self._sorted:
            (timestamp, key, seqnum), (value, record_context) = self._sorted.peekitem(0)
            if timestamp > horizon:
                break
            callback(
                self._key_serde.deserializer().deserialize(self._topic, key),
                self._value_serde.deserializer().deserialize(self._topic, value),
                record_context,
            )
            del self._sorted[(timestamp, key, seqnum)]
            if self.logging_enabled:
                self._log(self._store_key(timestamp, key, seqnum), None, timestamp)

    @staticmethod
    def _store_key(timestamp: int, key: bytes, seqnum: int) -> bytes:
        return _LONG.pack(timestamp) + key + _INT.pack(seqnum)

    def _log(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        log_change = getattr(self._context, "log_change", None)
        if callable(log_change):
            log_change(self._name, key, value, timestamp)

    def restore_batch(self, records: Iterable[tuple[bytes, bytes | None, int]]) -> None:
        """Apply changelog records ``(store key, value, timestamp)``: buffered records or tombstones."""
        for raw_key, raw_value, _ in records:
            if len(raw_key) < 12:
                raise SerializationException(
                    f"stream-table join buffer {self._name}: changelog key too short"
                )
            timestamp = _LONG.unpack_from(raw_key, 0)[0]
            seqnum = _INT.unpack_from(raw_key, len(raw_key) - 4)[0]
            entry = (timestamp, raw_key[8:-4], seqnum)
            self.observed_stream_time = max(self.observed_stream_time, timestamp)
            self._seqnum = max(self._seqnum, seqnum)
            if raw_value is None:
                self._sorted.pop(entry, None)
                continue
            reader = _Reader(raw_value, f"stream-table join buffer {self._name} changelog")
            buffered = BufferValue.deserialize(reader)
            reader.long()  # the buffer time Kafka writes (always 0 here)
            if buffered.new_value is None:
                raise SerializationException(
                    f"stream-table join buffer {self._name}: a buffered record without value"
                )
            self._sorted[entry] = (buffered.new_value, buffered.context)


class StreamTableJoinBufferBuilder(StoreBuilder[Any, Any]):
    """Builds the join buffer store ``<join name>-Buffer``; caching settings are no-ops, as in Kafka."""

    def __init__(self, name: str, grace_ms: int, topic: str) -> None:
        self._name = name
        self.grace_ms = grace_ms
        self._topic = topic
        self._logging = True
        self._log_config: dict[str, str] = {}

    @property
    def name(self) -> str:
        return self._name

    def build(self) -> StreamTableJoinBuffer:
        return StreamTableJoinBuffer(self._name, self.grace_ms, self._topic, self._logging)

    def with_caching_enabled(self) -> Self:
        return self

    def with_caching_disabled(self) -> Self:
        return self

    def with_logging_enabled(self, config: dict[str, str] | None = None) -> Self:
        self._logging = True
        self._log_config = dict(config or {})
        return self

    def with_logging_disabled(self) -> Self:
        self._logging = False
        return self

    def logging_enabled(self) -> bool:
        return self._logging

    def log_config(self) -> dict[str, str]:
        return dict(self._log_config) if self._logging else {}
