"""The stateless KStream operators, one supplier class per Kafka Streams operator.

Each class (``KStreamFilter``, ``KStreamMap``, ...) is the processor
*supplier* the graph node holds, named as in Kafka Streams; calling it
returns a fresh processor instance for one task.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kspark.errors import StreamsException
from kspark.key_value import KeyValue
from kspark.processor.api import Processor, ProcessorContext, Record
from kspark.processor.internals.fused import Fusable, Step

__all__ = [
    "ContextualProcessor",
    "KStreamFilter",
    "KStreamMap",
    "KStreamMapValues",
    "KStreamFlatMap",
    "KStreamFlatMapValues",
    "KStreamPeek",
    "ForeachProcessor",
    "KStreamPrint",
    "KStreamBranch",
    "PassThrough",
    "FixedKeyProcessorWrapper",
    "DelegatingContext",
    "to_key_value",
]


def to_key_value(result: Any, operation: str) -> KeyValue[Any, Any]:
    """A mapper's result as a ``KeyValue``: a ``KeyValue`` or any 2-tuple is accepted."""
    if isinstance(result, KeyValue):
        return result
    if isinstance(result, tuple) and len(result) == 2:
        return KeyValue(result[0], result[1])
    raise StreamsException(
        f"{operation}: the mapper must return a KeyValue or a (key, value) tuple, got {result!r}"
    )


class ContextualProcessor(Processor[Any, Any]):
    """A processor that keeps its context (Kafka's ``ContextualProcessor``)."""

    _context: ProcessorContext

    def init(self, context: ProcessorContext) -> None:
        self._context = context

    def context(self) -> ProcessorContext:
        return self._context

    def process(self, record: Record[Any, Any]) -> None:
        raise NotImplementedError


class _Filter(ContextualProcessor, Fusable):
    def __init__(self, predicate: Callable[[Any, Any], bool], filter_not: bool) -> None:
        self._predicate = predicate
        self._filter_not = filter_not

    def process(self, record: Record[Any, Any]) -> None:
        if self._filter_not ^ bool(self._predicate(record.key, record.value)):
            self._context.forward(record)

    def fuse(self, forward: Step) -> Step:
        predicate, filter_not = self._predicate, self._filter_not

        def step(key: Any, value: Any) -> None:
            if filter_not ^ bool(predicate(key, value)):
                forward(key, value)

        return step


class KStreamFilter:
    """``filter`` / ``filter_not`` (and the pass-all / non-null-key filter before a repartition)."""

    def __init__(self, predicate: Callable[[Any, Any], bool], filter_not: bool) -> None:
        self.predicate = predicate
        self.filter_not = filter_not

    def __call__(self) -> Processor[Any, Any]:
        return _Filter(self.predicate, self.filter_not)


class _Map(ContextualProcessor, Fusable):
    def __init__(self, mapper: Callable[[Any, Any], Any]) -> None:
        self._mapper = mapper

    def process(self, record: Record[Any, Any]) -> None:
        kv = to_key_value(self._mapper(record.key, record.value), "map")
        self._context.forward(record.with_key(kv.key).with_value(kv.value))

    def fuse(self, forward: Step) -> Step:
        mapper = self._mapper

        def step(key: Any, value: Any) -> None:
            kv = to_key_value(mapper(key, value), "map")
            forward(kv.key, kv.value)

        return step


class KStreamMap:
    """``map`` and ``select_key``: a new key and value per record."""

    def __init__(self, mapper: Callable[[Any, Any], Any]) -> None:
        self.mapper = mapper

    def __call__(self) -> Processor[Any, Any]:
        return _Map(self.mapper)


class _MapValues(ContextualProcessor, Fusable):
    def __init__(self, mapper: Callable[[Any, Any], Any]) -> None:
        self._mapper = mapper

    def process(self, record: Record[Any, Any]) -> None:
        self._context.forward(record.with_value(self._mapper(record.key, record.value)))

    def fuse(self, forward: Step) -> Step:
        mapper = self._mapper

        def step(key: Any, value: Any) -> None:
            forward(key, mapper(key, value))

        return step


def new_value_of(_key: Any, change: Any) -> Any:
    """``KTable.to_stream()``'s mapper: an update's new value (runners that compute a table
    themselves recognise it, to forward new values past it)."""
    return change.new_value


class KStreamMapValues:
    """``map_values``; the mapper gets ``(key, value)`` (the DSL adapts value-only mappers)."""

    def __init__(self, mapper: Callable[[Any, Any], Any]) -> None:
        self.mapper = mapper

    def __call__(self) -> Processor[Any, Any]:
        return _MapValues(self.mapper)


class _FlatMap(ContextualProcessor, Fusable):
    def __init__(self, mapper: Callable[[Any, Any], Iterable[Any]]) -> None:
        self._mapper = mapper

    def process(self, record: Record[Any, Any]) -> None:
        results = self._mapper(record.key, record.value)
        if results is None:
            raise StreamsException("flat_map: the mapper must return an iterable of KeyValue, got None")
        for result in results:
            kv = to_key_value(result, "flat_map")
            self._context.forward(record.with_key(kv.key).with_value(kv.value))

    def fuse(self, forward: Step) -> Step:
        mapper = self._mapper

        def step(key: Any, value: Any) -> None:
            results = mapper(key, value)
            if results is None:
                raise StreamsException("flat_map: the mapper must return an iterable of KeyValue, got None")
            for result in results:
                kv = to_key_value(result, "flat_map")
                forward(kv.key, kv.value)

        return step


class KStreamFlatMap:
    """``flat_map``: zero or more (key, value) pairs per record."""

    def __init__(self, mapper: Callable[[Any, Any], Iterable[Any]]) -> None:
        self.mapper = mapper

    def __call__(self) -> Processor[Any, Any]:
        return _FlatMap(self.mapper)


class _FlatMapValues(ContextualProcessor, Fusable):
    def __init__(self, mapper: Callable[[Any, Any], Iterable[Any]]) -> None:
        self._mapper = mapper

    def process(self, record: Record[Any, Any]) -> None:
        results = self._mapper(record.key, record.value)
        if results is None:
            raise StreamsException("flat_map_values: the mapper must return an iterable, got None")
        for value in results:
            self._context.forward(record.with_value(value))

    def fuse(self, forward: Step) -> Step:
        mapper = self._mapper

        def step(key: Any, value: Any) -> None:
            results = mapper(key, value)
            if results is None:
                raise StreamsException("flat_map_values: the mapper must return an iterable, got None")
            for result in results:
                forward(key, result)

        return step


class KStreamFlatMapValues:
    """``flat_map_values``: zero or more values per record, key unchanged."""

    def __init__(self, mapper: Callable[[Any, Any], Iterable[Any]]) -> None:
        self.mapper = mapper

    def __call__(self) -> Processor[Any, Any]:
        return _FlatMapValues(self.mapper)


class _Peek(ContextualProcessor, Fusable):
    def __init__(self, action: Callable[[Any, Any], None], forward: bool) -> None:
        self._action = action
        self._forward = forward

    def process(self, record: Record[Any, Any]) -> None:
        self._action(record.key, record.value)
        if self._forward:
            self._context.forward(record)

    def fuse(self, forward: Step) -> Step:
        action = self._action
        if not self._forward:
            return action

        def step(key: Any, value: Any) -> None:
            action(key, value)
            forward(key, value)

        return step


class KStreamPeek:
    """``peek``: call the action, forward the record unchanged."""

    def __init__(self, action: Callable[[Any, Any], None]) -> None:
        self.action = action

    def __call__(self) -> Processor[Any, Any]:
        return _Peek(self.action, True)


class ForeachProcessor:
    """``foreach``: call the action; a terminal operation."""

    def __init__(self, action: Callable[[Any, Any], None]) -> None:
        self.action = action

    def __call__(self) -> Processor[Any, Any]:
        return _Peek(self.action, False)


class _Print(ContextualProcessor):
    def __init__(self, to: str, label: str, mapper: Callable[[Any, Any], str] | None) -> None:
        self._to = to
        self._label = label
        self._mapper = mapper
        self._out: Any = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._out = sys.stdout if self._to == "sysout" else open(self._to, "a", encoding="utf-8")  # noqa: SIM115

    def process(self, record: Record[Any, Any]) -> None:
        text = self._mapper(record.key, record.value) if self._mapper else f"{record.key}, {record.value}"
        print(f"[{self._label}]: {text}", file=self._out, flush=True)

    def close(self) -> None:
        if self._out is not None and self._out is not sys.stdout:
            self._out.close()


class KStreamPrint:
    """``print(Printed)``: ``[label]: key, value`` per record to stdout or a file."""

    def __init__(self, to: str, label: str, mapper: Callable[[Any, Any], str] | None) -> None:
        self.to = to
        self.label = label
        self.mapper = mapper

    def __call__(self) -> Processor[Any, Any]:
        return _Print(self.to, self.label, self.mapper)


class _Branch(ContextualProcessor):
    def __init__(self, predicates: Sequence[Callable[[Any, Any], bool]], child_names: Sequence[str]) -> None:
        self._predicates = predicates
        self._child_names = child_names

    def process(self, record: Record[Any, Any]) -> None:
        for i, predicate in enumerate(self._predicates):
            if predicate(record.key, record.value):
                self._context.forward(record, self._child_names[i])
                return
        if len(self._child_names) > len(self._predicates):
            self._context.forward(record, self._child_names[len(self._predicates)])


class KStreamBranch:
    """``split()``: the first matching predicate's branch gets the record, else the default branch.

    The lists are shared with the ``BranchedKStream`` that fills them, as in Kafka.
    """

    def __init__(self, predicates: list[Callable[[Any, Any], bool]], child_names: list[str]) -> None:
        self.predicates = predicates
        self.child_names = child_names

    def __call__(self) -> Processor[Any, Any]:
        return _Branch(self.predicates, self.child_names)


class _PassThrough(ContextualProcessor, Fusable):
    def process(self, record: Record[Any, Any]) -> None:
        self._context.forward(record)

    def fuse(self, forward: Step) -> Step:
        return forward


class PassThrough:
    """Forwards every record unchanged (merge, branch children, to_table inputs)."""

    def __call__(self) -> Processor[Any, Any]:
        return _PassThrough()


class DelegatingContext(ProcessorContext):
    """A context that hands every call to ``inner``: the base of the wrappers that restrict one."""

    def __init__(self, inner: ProcessorContext) -> None:
        self._inner = inner

    def forward(self, record: Record[Any, Any], child_name: str | None = None) -> None:
        self._inner.forward(record, child_name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def application_id(self) -> str:
        return self._inner.application_id()

    def task_id(self) -> str:
        return self._inner.task_id()

    def app_config(self) -> dict[str, Any]:
        return self._inner.app_config()

    def state_dir(self) -> str | None:
        return self._inner.state_dir()

    def schedule(self, interval: Any, punctuation_type: Any, callback: Any) -> Any:
        return self._inner.schedule(interval, punctuation_type, callback)

    def get_state_store(self, name: str) -> Any:
        return self._inner.get_state_store(name)

    def commit(self) -> None:
        self._inner.commit()

    def current_stream_time_ms(self) -> int:
        return self._inner.current_stream_time_ms()

    def current_system_time_ms(self) -> int:
        return self._inner.current_system_time_ms()

    def record_metadata(self) -> Any:
        return self._inner.record_metadata()

    def timestamp(self) -> int:
        return self._inner.timestamp()

    def headers(self) -> Any:
        return self._inner.headers()

    def key_serde(self) -> Any:
        return self._inner.key_serde()

    def value_serde(self) -> Any:
        return self._inner.value_serde()


class _KeyCheckingContext(DelegatingContext):
    """Wraps a context so a ``process_values`` processor cannot change the key."""

    def __init__(self, inner: ProcessorContext, processor_name: str) -> None:
        super().__init__(inner)
        self._processor_name = processor_name
        self.current_key: Any = None

    def forward(self, record: Record[Any, Any], child_name: str | None = None) -> None:
        if record.key != self.current_key:
            raise StreamsException(
                f"process_values processor {self._processor_name} changed the key from "
                f"{self.current_key!r} to {record.key!r}; a FixedKeyProcessor may only change values"
            )
        self._inner.forward(record, child_name)


class _FixedKey(Processor[Any, Any]):
    def __init__(self, inner: Processor[Any, Any], processor_name: str) -> None:
        self._inner = inner
        self._processor_name = processor_name
        self._ctx: _KeyCheckingContext | None = None

    def init(self, context: ProcessorContext) -> None:
        self._ctx = _KeyCheckingContext(context, self._processor_name)
        self._inner.init(self._ctx)

    def process(self, record: Record[Any, Any]) -> None:
        assert self._ctx is not None
        self._ctx.current_key = record.key
        self._inner.process(record)

    def close(self) -> None:
        self._inner.close()


class FixedKeyProcessorWrapper:
    """``process_values``: runs the user's processor, rejecting any forward that changes the key."""

    def __init__(self, supplier: Callable[[], Processor[Any, Any]], processor_name: str) -> None:
        self.supplier = supplier
        self.processor_name = processor_name

    def __call__(self) -> Processor[Any, Any]:
        processor = self.supplier()
        if not isinstance(processor, Processor):
            raise StreamsException(
                f"process_values {self.processor_name}: the supplier must return a Processor, "
                f"got {processor!r}"
            )
        return _FixedKey(processor, self.processor_name)
