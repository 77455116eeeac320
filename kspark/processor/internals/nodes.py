"""Runtime nodes of a built topology: processor, source and sink nodes, and ``ProcessorTopology``.

A ``ProcessorNode`` wraps one user ``Processor`` instance and applies the
processing exception handler around it (Kafka's ``ProcessorNode.process``);
a ``SourceNode`` deserializes and forwards; a ``SinkNode`` hands records to
the record collector. ``ProcessorTopology`` is the set of nodes and stores one
task runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kspark.errors import TaskMigratedException, TopologyException
from kspark.processor.api import FixedKeyProcessor, Headers, Processor, Record
from kspark.processor.internals.records import ProcessorRecordContext
from kspark.processor.internals.timestamp_extractors import TimestampExtractor

if TYPE_CHECKING:
    from kspark.processor.internals.context import InternalProcessorContext
    from kspark.state.api import StateStore

__all__ = [
    "FailedProcessingException",
    "ProcessorNode",
    "SourceNode",
    "SinkNode",
    "ProcessorTopology",
]


class FailedProcessingException(Exception):
    """A processor failed and the handler said FAIL; carries the failing node's name up the stack."""

    def __init__(self, node_name: str, cause: BaseException) -> None:
        super().__init__(f"Processor {node_name} failed: {cause!r}")
        self.node_name = node_name
        self.cause = cause


class ProcessorNode:
    """A node of the running topology; ``processor`` is None for sources and sinks."""

    def __init__(
        self, name: str, processor: Processor[Any, Any] | None, state_store_names: list[str]
    ) -> None:
        self.name = name
        self.processor = processor
        self.state_store_names: list[str] = list(state_store_names)
        self.children: list[ProcessorNode] = []
        self._child_by_name: dict[str, ProcessorNode] = {}
        self.context: InternalProcessorContext | None = None
        self.fixed_key = isinstance(processor, FixedKeyProcessor)
        self.current_key: Any = None
        self._closed = False

    def add_child(self, child: ProcessorNode) -> None:
        self.children.append(child)
        self._child_by_name[child.name] = child

    def child(self, name: str) -> ProcessorNode | None:
        return self._child_by_name.get(name)

    def is_terminal(self) -> bool:
        return not self.children

    def init(self, context: InternalProcessorContext) -> None:
        self.context = context
        if self.processor is not None:
            previous = context.current_node
            context.current_node = self
            try:
                self.processor.init(context)
            finally:
                context.current_node = previous

    def close(self) -> None:
        if self.processor is not None and not self._closed:
            self.processor.close()
        self._closed = True

    def process(self, record: Record[Any, Any]) -> None:
        if self._closed:
            raise RuntimeError(f"The processor {self.name} is already closed")
        assert self.context is not None and self.processor is not None
        try:
            if self.fixed_key:
                self.current_key = record.key
            self.processor.process(record)
        except (FailedProcessingException, TaskMigratedException):
            raise
        except Exception as e:
            self.context.handle_processing_exception(self, record, e)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def _resolve_serde(
    given: Any, context: InternalProcessorContext, kind: str, node_name: str, *, is_key: bool
) -> Any:
    """Kafka's ``WrappingNullableUtils``: fill in the config's default serde where a node has none.

    A missing (de)serializer becomes the default serde's; a wrapping one whose
    inner serde was left unset (e.g. the ``Change`` serde of ``KTable.group_by``'s
    repartition topic without ``Grouped`` serdes) fills it in via ``init_nullable``.
    """
    which = "key" if is_key else "value"
    role = "deserializer" if kind == "Source" else "serializer"
    if given is None:
        serde = context.key_serde() if is_key else context.value_serde()
        if serde is None:
            raise TopologyException(
                f"{kind} node {node_name} has no {which} {role} and no 'default.{which}.serde' is configured"
            )
        return serde.deserializer() if kind == "Source" else serde.serializer()
    init_nullable = getattr(given, "init_nullable", None)
    if callable(init_nullable):
        init_nullable(context)
    return given


class SourceNode(ProcessorNode):
    """Reads one or more topics: deserializes, extracts timestamps, forwards to its children."""

    def __init__(
        self,
        name: str,
        topics: list[str],
        key_deserializer: Any = None,
        value_deserializer: Any = None,
        timestamp_extractor: TimestampExtractor | None = None,
    ) -> None:
        super().__init__(name, None, [])
        self.topics = topics
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self.timestamp_extractor = timestamp_extractor

    def init(self, context: InternalProcessorContext) -> None:
        self.context = context
        self.key_deserializer = _resolve_serde(
            self.key_deserializer, context, "Source", self.name, is_key=True
        )
        self.value_deserializer = _resolve_serde(
            self.value_deserializer, context, "Source", self.name, is_key=False
        )

    def deserialize_key(self, topic: str, headers: Headers, data: bytes | None) -> Any:
        return self.key_deserializer.deserialize(topic, data)

    def deserialize_value(self, topic: str, headers: Headers, data: bytes | None) -> Any:
        return self.value_deserializer.deserialize(topic, data)

    def process(self, record: Record[Any, Any]) -> None:
        assert self.context is not None
        self.context.forward(record)


TopicNameExtractor = Callable[[Any, Any, ProcessorRecordContext], str]


class SinkNode(ProcessorNode):
    """Writes records to a topic (fixed, or chosen per record by a topic-name extractor)."""

    def __init__(
        self,
        name: str,
        topic: str | None,
        topic_extractor: TopicNameExtractor | None,
        key_serializer: Any = None,
        value_serializer: Any = None,
        partitioner: Callable[..., Any] | None = None,
    ) -> None:
        super().__init__(name, None, [])
        self.topic = topic
        self.topic_extractor = topic_extractor
        self.key_serializer = key_serializer
        self.value_serializer = value_serializer
        self.partitioner = partitioner

    def add_child(self, child: ProcessorNode) -> None:
        raise TopologyException(f"Sink {self.name} cannot have children (tried to add {child.name})")

    def init(self, context: InternalProcessorContext) -> None:
        self.context = context
        self.key_serializer = _resolve_serde(self.key_serializer, context, "Sink", self.name, is_key=True)
        self.value_serializer = _resolve_serde(
            self.value_serializer, context, "Sink", self.name, is_key=False
        )

    def process(self, record: Record[Any, Any]) -> None:
        assert self.context is not None
        rc = self.context.record_context
        extraction_context = ProcessorRecordContext(
            record.timestamp,
            rc.offset if rc else -1,
            rc.partition if rc else -1,
            rc.topic if rc else None,
            record.headers,
        )
        if self.topic is not None:
            topic = self.topic
        else:
            assert self.topic_extractor is not None
            topic = self.topic_extractor(record.key, record.value, extraction_context)
            if not isinstance(topic, str) or not topic:
                raise TopologyException(
                    f"Sink {self.name}: topic-name extractor returned {topic!r}; it must return a topic name"
                )
        self.context.record_collector.send(
            topic,
            record.key,
            record.value,
            record.headers,
            record.timestamp,
            self.key_serializer,
            self.value_serializer,
            self.name,
            self.partitioner,
        )


@dataclass
class ProcessorTopology:
    """The nodes and stores one task runs (Kafka's ``ProcessorTopology``).

    ``processors`` is in topology insertion order (init order); source topics
    and sink topics are decorated (internal topics carry the application id).
    """

    processors: list[ProcessorNode]
    sources_by_topic: dict[str, SourceNode]
    sinks_by_name: dict[str, SinkNode]
    state_store_builders: dict[str, Any]
    store_to_changelog_topic: dict[str, str] = field(default_factory=dict)
    global_store_names: list[str] = field(default_factory=list)
    repartition_topics: set[str] = field(default_factory=set)

    def source_topics(self) -> list[str]:
        return list(self.sources_by_topic)

    def sink_topics(self) -> set[str]:
        return {s.topic for s in self.sinks_by_name.values() if s.topic is not None}

    def source(self, topic: str) -> SourceNode | None:
        return self.sources_by_topic.get(topic)

    def build_stores(self) -> dict[str, StateStore]:
        """Fresh store instances for this topology (a runner may supply its own instead)."""
        return {name: builder.build() for name, builder in self.state_store_builders.items()}
