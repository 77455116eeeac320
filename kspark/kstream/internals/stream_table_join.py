"""Stream-table joins: ``KStreamKTableJoin`` and ``KStreamGlobalKTableJoin``.

Each stream record looks up the table's current value through a value
getter (the table is not a trigger: a table update arriving later does not
emit anything). A record whose join key or value is ``None`` is dropped and
counted in ``dropped-records-total``, except that a left join still emits
for a ``None`` *join key* with a value (KIP-962; for a GlobalKTable the join
key is the key selector's result), joined with ``None``.

Against a versioned table (KIP-914) a record is joined with the table *as of
its timestamp*. With ``Joined.with_grace_period`` (versioned tables only) the
stream records first wait in a time-ordered buffer (``<name>-Buffer``, see
:mod:`kspark.kstream.internals.stream_table_join_buffer`) until the stream
time the buffer has seen passes their timestamp plus the grace period, so a
table update arriving up to the grace period after a stream record is seen by
it; a record older than that is joined at once, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark.kstream.internals.graph import StreamTableJoinNode
from kspark.kstream.internals.kstream_processors import ContextualProcessor
from kspark.kstream.internals.value_getters import KTableValueGetter, KTableValueGetterSupplier
from kspark.processor.api import Processor, ProcessorContext, Record
from kspark.processor.internals.fused import Fusable, Step
from kspark.processor.internals.records import ProcessorRecordContext

__all__ = ["KStreamKTableJoin", "KStreamGlobalKTableJoin", "GracedStreamTableJoinNode", "record_dropped"]


def record_dropped(context: ProcessorContext, reason: str) -> None:
    """Count a dropped record in the task's ``dropped-records-total`` (contract 4)."""
    hook = getattr(context, "record_dropped", None)
    if hook is not None:
        hook(reason)


class _JoinProcessor(ContextualProcessor, Fusable):
    def __init__(
        self,
        getter: KTableValueGetter,
        key_mapper: Callable[[Any, Any], Any],
        joiner: Callable[[Any, Any, Any], Any],
        left: bool,
        grace_ms: int | None = None,
        buffer_name: str | None = None,
    ) -> None:
        self._getter = getter
        self._key_mapper = key_mapper
        self._joiner = joiner
        self._left = left
        self._grace_ms = grace_ms
        self._buffer_name = buffer_name
        self._buffer: Any = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._getter.init(context)
        if self._grace_ms is not None:
            if not self._getter.is_versioned():
                raise ValueError("KTable must be versioned to use a grace period in a stream table join.")
            assert self._buffer_name is not None
            self._buffer = context.get_state_store(self._buffer_name)

    def process(self, record: Record[Any, Any]) -> None:
        mapped_key = self._key_mapper(record.key, record.value)
        # Kafka 4.1: a left join keeps a record whose *join key* is null (the record key for a KTable,
        # the key selector's result for a GlobalKTable) and joins it with null
        relaxed = self._left and mapped_key is None and record.value is not None
        if not relaxed and (mapped_key is None or record.value is None):
            record_dropped(self._context, "Skipping record due to null join key or value.")
            return
        if self._buffer is None or record.key is None:
            self._do_join(record)
        elif not self._buffer.put(record, _record_context(self._context, record)):
            self._do_join(record)  # older than the grace period: joined at once, as Kafka does
        else:
            self._buffer.evict_expired(self._emit)

    def _emit(self, key: Any, value: Any, rc: ProcessorRecordContext) -> None:
        # the buffered record is joined under its own record context (topic, offset, headers)
        ctx: Any = self._context
        has_rc = hasattr(ctx, "record_context")
        previous = getattr(ctx, "record_context", None)
        if has_rc:
            ctx.record_context = rc
        try:
            self._do_join(Record(key, value, rc.timestamp, rc.headers))
        finally:
            if has_rc:
                ctx.record_context = previous

    def _do_join(self, record: Record[Any, Any]) -> None:
        mapped_key = self._key_mapper(record.key, record.value)
        table_value = None
        if mapped_key is not None:
            if self._getter.is_versioned():
                vt = self._getter.get_as_of(mapped_key, record.timestamp)
            else:
                vt = self._getter.get(mapped_key)
            table_value = None if vt is None else vt.value
        if self._left or table_value is not None:
            self._context.forward(record.with_value(self._joiner(record.key, record.value, table_value)))

    def fusable(self) -> bool:
        # A versioned table is read as of each record's timestamp and a grace period buffers the
        # records: a step sees neither. Whether the table is versioned is known after init.
        return (
            self._grace_ms is None
            and getattr(self, "_context", None) is not None
            and not self._getter.is_versioned()
        )

    def fuse(self, forward: Step) -> Step:
        key_mapper, joiner, left, get = self._key_mapper, self._joiner, self._left, self._getter.get
        context = self._context

        def step(key: Any, value: Any) -> None:
            # process() and _do_join() as one; the key mapper is called twice, as they (and Kafka) do
            mapped_key = key_mapper(key, value)
            if value is None or (mapped_key is None and not left):
                record_dropped(context, "Skipping record due to null join key or value.")
                return
            mapped_key = key_mapper(key, value)
            table_value = None
            if mapped_key is not None:
                vt = get(mapped_key)
                table_value = None if vt is None else vt.value
            if left or table_value is not None:
                forward(key, joiner(key, value, table_value))

        return step

    def close(self) -> None:
        self._getter.close()


class KStreamKTableJoin:
    """``KStream.join/left_join(KTable)``: ``joiner(key, stream_value, table_value)``; with
    ``grace_ms`` the stream records wait in the buffer store ``buffer_name`` (versioned tables)."""

    def __init__(
        self,
        value_getter_supplier: KTableValueGetterSupplier,
        joiner: Callable[[Any, Any, Any], Any],
        left: bool,
        grace_ms: int | None = None,
        buffer_name: str | None = None,
    ) -> None:
        self.value_getter_supplier = value_getter_supplier
        self.joiner = joiner
        self.left = left
        self.grace_ms = grace_ms
        self.buffer_name = buffer_name

    def __call__(self) -> Processor[Any, Any]:
        return _JoinProcessor(
            self.value_getter_supplier.get(),
            _record_key,
            self.joiner,
            self.left,
            self.grace_ms,
            self.buffer_name,
        )


def _record_key(key: Any, _value: Any) -> Any:
    return key


def _record_context(context: ProcessorContext, record: Record[Any, Any]) -> ProcessorRecordContext:
    """The context of the record being buffered (built from the public api for foreign contexts)."""
    rc = getattr(context, "record_context", None)
    if isinstance(rc, ProcessorRecordContext):
        return rc
    md = context.record_metadata()
    if md is None:
        return ProcessorRecordContext(record.timestamp, -1, -1, None, record.headers)
    return ProcessorRecordContext(record.timestamp, md.offset, md.partition, md.topic, record.headers)


class KStreamGlobalKTableJoin:
    """``KStream.join/left_join(GlobalKTable, key_selector, joiner)``."""

    def __init__(
        self,
        value_getter_supplier: KTableValueGetterSupplier,
        key_selector: Callable[[Any, Any], Any],
        joiner: Callable[[Any, Any, Any], Any],
        left: bool,
    ) -> None:
        self.value_getter_supplier = value_getter_supplier
        self.key_selector = key_selector
        self.joiner = joiner
        self.left = left

    def __call__(self) -> Processor[Any, Any]:
        return _JoinProcessor(self.value_getter_supplier.get(), self.key_selector, self.joiner, self.left)


class GracedStreamTableJoinNode(StreamTableJoinNode):
    """A stream-table join with a grace period: connects its buffer store too, and checks at build
    time, as Kafka's ``StreamTableJoinNode``, that every table store is versioned and keeps at
    least the grace period of history."""

    def __init__(self, *args: Any, grace_ms: int, buffer_name: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.grace_ms = grace_ms
        self.buffer_name = buffer_name

    def write_to_topology(self, builder: Any) -> None:
        super().write_to_topology(builder)
        name = self.processor_parameters.processor_name
        builder.connect_processor_and_state_stores(name, self.buffer_name)
        for store_name in self.store_names:
            store_builder = builder.store_builder(store_name)
            history_retention = getattr(store_builder, "history_retention", None)
            if not callable(history_retention):
                raise ValueError("KTable must be versioned to use a grace period in a stream table join.")
            if self.grace_ms > history_retention():
                raise ValueError("History retention must be at least grace period.")


def graced_stream_table_join(
    builder: Any,
    name: str,
    table: Any,
    getter: KTableValueGetterSupplier,
    joiner: Callable[[Any, Any, Any], Any],
    joined: Any,
    left: bool,
    stream_name: str,
) -> GracedStreamTableJoinNode:
    """The graph node of ``stream.join(table, joiner, Joined...with_grace_period(g))``: the buffer
    store ``<name>-Buffer`` is added to the builder and the table must be versioned (checked here
    when the table says so already, else when the topology is written, as Kafka)."""
    from kspark.kstream.internals.stream_table_join_buffer import StreamTableJoinBufferBuilder
    from kspark.kstream.internals.versioned_semantics import output_versioned
    from kspark.processor.api import to_millis

    grace_ms = to_millis(joined.grace_period, "Joined grace period")
    if grace_ms < 0:
        raise ValueError(f"Joined grace period cannot be negative, got {grace_ms} ms")
    if output_versioned(table._graph_node) is False:
        raise ValueError("KTable must be versioned to use a grace period in a stream table join.")
    buffer_name = name + "-Buffer"
    builder.add_state_store(StreamTableJoinBufferBuilder(buffer_name, grace_ms, name))
    supplier = KStreamKTableJoin(getter, joiner, left, grace_ms, buffer_name)
    from kspark.kstream.internals.graph import ProcessorParameters

    return GracedStreamTableJoinNode(
        name,
        ProcessorParameters(supplier, name),
        getter.store_names(),
        stream_name,
        grace_ms=grace_ms,
        buffer_name=buffer_name,
    )
