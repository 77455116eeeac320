"""The Processor API: ``Processor``, ``Record``, ``ProcessorContext`` and punctuation.

This is Kafka Streams' ``org.apache.kafka.streams.processor.api`` in Python.
A processor receives one ``Record`` at a time and forwards zero or more
records to its children through the context it was initialised with. The
DSL is built from processors of this same interface, and every runner
(the test driver, Spark) executes them through it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from kspark.state.api import StateStore

__all__ = [
    "Header",
    "Headers",
    "Record",
    "RecordMetadata",
    "Processor",
    "FixedKeyProcessor",
    "ProcessorContext",
    "PunctuationType",
    "Punctuator",
    "Cancellable",
    "ProcessorSupplier",
    "to_millis",
]

K = TypeVar("K")
V = TypeVar("V")


def to_millis(duration: int | float | timedelta, what: str = "duration") -> int:
    """Milliseconds of a ``timedelta`` or an int of milliseconds; rejects anything else."""
    if isinstance(duration, timedelta):
        return int(duration / timedelta(milliseconds=1))
    if isinstance(duration, bool) or not isinstance(duration, int | float):
        raise TypeError(f"{what} must be a datetime.timedelta or int milliseconds, got {duration!r}")
    return int(duration)


@dataclass(frozen=True)
class Header:
    """One record header: a string key and a bytes value (``None`` allowed)."""

    key: str
    value: bytes | None


class Headers:
    """An ordered, mutable list of headers, as Kafka's ``Headers`` (keys may repeat)."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[Header | tuple[str, bytes | None]] | None = None) -> None:
        # Most records have no headers; this runs once per record.
        self._items: list[Header] = (
            [h if isinstance(h, Header) else Header(h[0], h[1]) for h in items] if items else []
        )

    def add(self, key: str, value: bytes | None) -> Headers:
        self._items.append(Header(key, value))
        return self

    def remove(self, key: str) -> Headers:
        self._items = [h for h in self._items if h.key != key]
        return self

    def last_header(self, key: str) -> Header | None:
        for h in reversed(self._items):
            if h.key == key:
                return h
        return None

    def headers(self, key: str) -> list[Header]:
        return [h for h in self._items if h.key == key]

    def to_list(self) -> list[tuple[str, bytes | None]]:
        return [(h.key, h.value) for h in self._items]

    def copy(self) -> Headers:
        return Headers(self._items)

    def __iter__(self) -> Iterator[Header]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Headers):
            return self._items == other._items
        return NotImplemented

    def __repr__(self) -> str:
        return f"Headers({self.to_list()!r})"


@dataclass(frozen=True)
class Record(Generic[K, V]):
    """A key, a value, a timestamp (epoch ms) and headers: what flows between processors.

    Records are immutable; ``with_key`` and friends return a new record, so a
    processor may forward the same input with a changed part without
    affecting the siblings that see the original.
    """

    key: K
    value: V
    timestamp: int = 0
    headers: Headers = field(default_factory=Headers)

    def with_key(self, key: Any) -> Record[Any, V]:
        return Record(key, self.value, self.timestamp, self.headers)

    def with_value(self, value: Any) -> Record[K, Any]:
        return Record(self.key, value, self.timestamp, self.headers)

    def with_timestamp(self, timestamp: int) -> Record[K, V]:
        if timestamp < 0:
            raise ValueError(f"Timestamp should be positive or zero, but it was {timestamp}")
        return Record(self.key, self.value, timestamp, self.headers)

    def with_headers(self, headers: Headers) -> Record[K, V]:
        return Record(self.key, self.value, self.timestamp, headers)


@dataclass(frozen=True)
class RecordMetadata:
    """Where the record being processed came from (absent inside punctuation)."""

    topic: str
    partition: int
    offset: int


class PunctuationType(Enum):
    """What time drives a punctuation: stream time (event time) or the wall clock."""

    STREAM_TIME = "STREAM_TIME"
    WALL_CLOCK_TIME = "WALL_CLOCK_TIME"


Punctuator = Callable[[int], None]
"""A punctuation callback; it receives the timestamp it fires for (epoch ms)."""


class Cancellable(ABC):
    """Returned by ``ProcessorContext.schedule``; ``cancel()`` stops the punctuation."""

    @abstractmethod
    def cancel(self) -> None:
        """Stop firing this punctuation."""


class ProcessorContext(ABC):
    """What a processor can see and do: forward, schedule, reach its stores, read metadata."""

    @abstractmethod
    def application_id(self) -> str: ...

    @abstractmethod
    def task_id(self) -> str:
        """The task, as Kafka Streams prints it: ``<subtopology>_<partition>``."""

    @abstractmethod
    def app_config(self) -> dict[str, Any]: ...

    def state_dir(self) -> str | None:
        """The task's state directory (Kafka's ``stateDir``): persistent stores keep their files
        under it (a RocksDB store in ``<state_dir>/rocksdb/<store name>``). ``None`` when the runner
        gives the task none (the test driver, the global-store task): such a store then opens in a
        temporary directory of its own, removed when it closes."""
        return None

    def app_configs(self) -> dict[str, Any]:
        """The application's configuration (Kafka's ``appConfigs``; the same as ``app_config``)."""
        return self.app_config()

    def app_configs_with_prefix(self, prefix: str) -> dict[str, Any]:
        """The settings whose names start with ``prefix``, with the prefix removed (Kafka's
        ``appConfigsWithPrefix``)."""
        return {k[len(prefix) :]: v for k, v in self.app_config().items() if k.startswith(prefix)}

    @abstractmethod
    def forward(self, record: Record[Any, Any], child_name: str | None = None) -> None:
        """Send ``record`` to every child, or only to the child called ``child_name``."""

    @abstractmethod
    def schedule(
        self,
        interval: int | timedelta,
        punctuation_type: PunctuationType,
        callback: Punctuator,
    ) -> Cancellable:
        """Call ``callback`` every ``interval`` of stream time or wall-clock time."""

    @abstractmethod
    def get_state_store(self, name: str) -> StateStore:
        """The store called ``name``; it must be connected to this processor."""

    @abstractmethod
    def commit(self) -> None:
        """Ask for a commit as soon as possible (a hint, as in Kafka Streams)."""

    @abstractmethod
    def current_stream_time_ms(self) -> int:
        """The task's stream time: the largest timestamp it has processed (-1 if none)."""

    @abstractmethod
    def current_system_time_ms(self) -> int:
        """The wall-clock time the runner uses (the test driver's mock clock)."""

    @abstractmethod
    def record_metadata(self) -> RecordMetadata | None:
        """Topic, partition and offset of the input record being processed, or None."""

    @abstractmethod
    def timestamp(self) -> int:
        """Timestamp of the record being processed (the punctuation time inside punctuation)."""

    @abstractmethod
    def headers(self) -> Headers:
        """Headers of the record being processed."""

    def topic(self) -> str | None:
        md = self.record_metadata()
        return md.topic if md else None

    def partition(self) -> int:
        md = self.record_metadata()
        return md.partition if md else -1

    def offset(self) -> int:
        md = self.record_metadata()
        return md.offset if md else -1

    @abstractmethod
    def key_serde(self) -> Any:
        """The default key serde from the config."""

    @abstractmethod
    def value_serde(self) -> Any:
        """The default value serde from the config."""


class Processor(ABC, Generic[K, V]):
    """A node of the topology: ``init`` once, ``process`` per record, ``close`` at the end."""

    def init(self, context: ProcessorContext) -> None:
        """Keep the context, look up stores, schedule punctuations."""

    @abstractmethod
    def process(self, record: Record[K, V]) -> None:
        """Handle one record; forward results through the context."""

    def close(self) -> None:
        """Release resources (stores are closed by the runtime, not here)."""


class FixedKeyProcessor(Processor[K, V]):
    """A processor that may change values but never keys (``process_values``).

    The runtime checks that every record it forwards keeps the input key, so
    no repartitioning is needed downstream, as with Kafka Streams'
    ``FixedKeyProcessor``.
    """


ProcessorSupplier = Callable[[], Processor[Any, Any]]
"""A zero-argument callable returning a new Processor (a Processor subclass works)."""
