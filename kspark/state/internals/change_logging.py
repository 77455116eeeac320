"""Change-logging layers: every write to the bytes store is also sent to the changelog.

As Kafka's ``ChangeLogging*BytesStore``: the layer sits between the typed
(metered) store and the inner bytes store, writes through, then calls
``context.log_change(store_name, key_bytes, value_bytes, timestamp)`` when
the task context has that method (the test driver records the calls, the
Spark runner will write them). Changelog keys use Kafka's changelog layouts:
the plain key for key-value stores, ``key + start + seqnum`` for window
stores, ``key + end + start`` for session stores. Timestamped stores log the
plain value with the value's own timestamp, not the ``timestamp + value``
bytes they hold. Reads pass straight through to the wrapped store.

A window store that retains duplicates numbers its changelog keys with a
sequence number per put. The Spark runner keeps a changelog as a map keyed
by changelog key, so after a restore the layer continues numbering above
the highest restored sequence number (``restored_keys``): a duplicate
written after a restore never overwrites a restored entry's key. (Kafka
restarts at 0, harmless there since such a changelog is not compacted.)
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kspark.kstream.windowed import Windowed
from kspark.serde.windowed import session_key_to_binary, window_store_key_parts, window_store_key_to_binary
from kspark.state.api import StateStore

if TYPE_CHECKING:
    from kspark.processor.api import ProcessorContext

__all__ = [
    "WrappedStateStore",
    "ChangeLoggingKeyValueBytesStore",
    "ChangeLoggingWindowBytesStore",
    "ChangeLoggingSessionBytesStore",
    "split_timestamped",
]

_TS = struct.Struct(">q")
_INT_MAX = 0x7FFFFFFF


def split_timestamped(value: bytes) -> tuple[int, bytes]:
    """(timestamp, raw value) of a ``ValueAndTimestamp`` serialized value."""
    return _TS.unpack_from(value, 0)[0], value[8:]


class WrappedStateStore(StateStore):
    """A layer around another store; anything it does not override goes to ``wrapped``."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped
        self._context: ProcessorContext | None = None

    @property
    def name(self) -> str:
        name: str = self.wrapped.name
        return name

    def init(self, context: ProcessorContext, root: StateStore) -> None:
        self._context = context
        self.wrapped.init(context, root)

    def flush(self) -> None:
        self.wrapped.flush()

    def set_flush_listener(self, listener: Any, send_old_values: bool) -> bool:
        """Pass a flush listener down to a caching layer, if there is one below (Kafka's
        ``WrappedStateStore.setFlushListener``)."""
        setter = getattr(self.wrapped, "set_flush_listener", None)
        return bool(setter(listener, send_old_values)) if callable(setter) else False

    def close(self) -> None:
        self.wrapped.close()

    def persistent(self) -> bool:
        result: bool = self.wrapped.persistent()
        return result

    def is_open(self) -> bool:
        result: bool = self.wrapped.is_open()
        return result

    def __getattr__(self, attr: str) -> Any:
        # only reached for names not defined on the layer: the read methods
        if attr == "wrapped":
            raise AttributeError(attr)
        return getattr(self.wrapped, attr)

    def _timestamp(self) -> int:
        # the timestamp of the record (or punctuation) that caused the write, as Kafka logs it
        return self._context.timestamp() if self._context is not None else -1

    def _log(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        log_change = getattr(self._context, "log_change", None)
        if callable(log_change):
            log_change(self.name, key, value, timestamp)


class ChangeLoggingKeyValueBytesStore(WrappedStateStore):
    """Logs every put, put_if_absent (when it wrote), put_all entry and delete."""

    def __init__(self, wrapped: Any, *, timestamped: bool = False) -> None:
        super().__init__(wrapped)
        self.timestamped = timestamped

    def init(self, context: ProcessorContext, root: StateStore) -> None:
        super().init(context, root)
        # An LRU store's eviction is a delete the changelog must see (Kafka's
        # maybeSetEvictionListener). Kafka's timestamped builder wraps a plain store in a marker
        # or adapter first, so only a plain key-value store's layer sees the LRU store itself.
        set_listener = getattr(self.wrapped, "set_when_eldest_removed", None)
        if not self.timestamped and callable(set_listener):
            set_listener(lambda key, value: self._log(key, None, self._timestamp()))

    def _log_value(self, key: bytes, value: bytes | None) -> None:
        if self.timestamped and value is not None:
            timestamp, raw = split_timestamped(value)
            self._log(key, raw, timestamp)
        else:
            self._log(key, value, self._timestamp())

    def put(self, key: bytes, value: bytes | None) -> None:
        self.wrapped.put(key, value)
        self._log_value(key, value)

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        previous: bytes | None = self.wrapped.put_if_absent(key, value)
        if previous is None:
            self._log_value(key, value)
        return previous

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        entries = list(entries)
        self.wrapped.put_all(entries)
        for key, value in entries:
            self._log_value(key, value)

    def delete(self, key: bytes) -> bytes | None:
        old: bytes | None = self.wrapped.delete(key)
        self._log(key, None, self._timestamp())
        return old


class ChangeLoggingWindowBytesStore(WrappedStateStore):
    """Logs ``key + start + seqnum`` (seqnum counts puts when duplicates are retained)."""

    def __init__(self, wrapped: Any, *, retain_duplicates: bool = False, timestamped: bool = False) -> None:
        super().__init__(wrapped)
        self.retain_duplicates = retain_duplicates
        self.timestamped = timestamped
        self._seqnum = 0

    def put(self, key: bytes, value: bytes | None, window_start_timestamp: int) -> None:
        self.wrapped.put(key, value, window_start_timestamp)
        if self.retain_duplicates:
            self._seqnum = (self._seqnum + 1) & _INT_MAX
        store_key = window_store_key_to_binary(key, window_start_timestamp, self._seqnum)
        if self.timestamped and value is not None:
            timestamp, raw = split_timestamped(value)
            self._log(store_key, raw, timestamp)
        else:
            self._log(store_key, value, self._timestamp())

    def restored_keys(self, keys: Iterable[bytes]) -> None:
        """Continue the sequence numbers above the highest one among the restored changelog keys."""
        if self.retain_duplicates:
            for key in keys:
                self._seqnum = max(self._seqnum, window_store_key_parts(key)[2])


class ChangeLoggingSessionBytesStore(WrappedStateStore):
    """Logs ``key + end + start`` for every put and remove."""

    def put(self, session_key: Windowed[bytes], aggregate: bytes | None) -> None:
        self.wrapped.put(session_key, aggregate)
        key = session_key_to_binary(session_key.key, session_key.window.start, session_key.window.end)
        self._log(key, aggregate, self._timestamp())

    def remove(self, session_key: Windowed[bytes]) -> None:
        self.wrapped.remove(session_key)
        key = session_key_to_binary(session_key.key, session_key.window.start, session_key.window.end)
        self._log(key, None, self._timestamp())
