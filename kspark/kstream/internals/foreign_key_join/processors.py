"""The five processors of a foreign-key table-table join (KIP-213), as Kafka Streams 4.1 runs them.

Left side, under the left table:

* ``SubscriptionSendProcessorSupplier``: from each left update (a ``Change``)
  decides which subscriptions to send, keyed by foreign key, with the
  instruction and the hash of the new left value.

Right side, in the sub-topology of the right table (the subscription topic
is co-partitioned with it):

* ``SubscriptionReceiveProcessorSupplier``: keeps the subscriptions in the
  subscription store under ``CombinedKey(fk, pk)`` and forwards each as a
  ``Change`` of that store.
* ``SubscriptionJoinProcessorSupplier``: answers a subscription with the
  right table's current value for its foreign key, per its instruction.
* ``ForeignTableJoinProcessorSupplier``: on a right table update, answers
  every subscription of that foreign key (a prefix scan of the store).

Back on the left side (the response topic is co-partitioned with the left table):

* ``ResponseJoinProcessorSupplier``: drops a response whose hash is not the
  hash of the left table's current value (stale: the left row changed
  since), otherwise joins and forwards the result (or a tombstone).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kspark.errors import StreamsException
from kspark.kstream.internals.change import Change
from kspark.kstream.internals.foreign_key_join.murmur3 import hash128
from kspark.kstream.internals.foreign_key_join.wrappers import (
    CombinedKey,
    CombinedKeySchema,
    Instruction,
    PseudoTopic,
    SubscriptionResponseWrapper,
    SubscriptionWrapper,
    SubscriptionWrapperSerde,
)
from kspark.kstream.internals.kstream_processors import ContextualProcessor
from kspark.kstream.internals.stream_table_join import record_dropped
from kspark.kstream.internals.value_getters import KTableValueGetter, KTableValueGetterSupplier
from kspark.processor.api import Processor, ProcessorContext, Record
from kspark.serde import Serdes
from kspark.state.api import ValueAndTimestamp

__all__ = [
    "SubscriptionSendProcessorSupplier",
    "SubscriptionReceiveProcessorSupplier",
    "SubscriptionJoinProcessorSupplier",
    "ForeignTableJoinProcessorSupplier",
    "ResponseJoinProcessorSupplier",
]

_log = logging.getLogger(__name__)
_NULL_FK = "Skipping record due to null foreign key."
_BYTES = Serdes.ByteArray().serializer()


def _serializer(serde: Any, context: ProcessorContext, is_key: bool) -> Any:
    """The serde's serializer, or the config's default (Kafka: ``context.keySerde()`` at init)."""
    if serde is None:
        serde = context.key_serde() if is_key else context.value_serde()
    return serde.serializer()


# -- left side: send subscriptions ------------------------------------------------------------------


_OUT_OF_ORDER = "Skipping out-of-order record from versioned table while performing table-table join."


def _skip_out_of_order(context: ProcessorContext) -> None:
    """KIP-914: an update older than its versioned table's latest changes no join result; Kafka
    drops it, counted as a dropped record."""
    _log.info(_OUT_OF_ORDER)
    record_dropped(context, _OUT_OF_ORDER)


class _SubscriptionSend(ContextualProcessor):
    def __init__(self, supplier: SubscriptionSendProcessorSupplier) -> None:
        self._s = supplier
        self._hash: tuple[int, int] | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._fk_topic = self._s.foreign_key_topic.resolve(context)
        self._value_topic = self._s.value_hash_topic.resolve(context)
        self._fk_serializer = _serializer(self._s.foreign_key_serde, context, True)
        self._value_serializer = _serializer(self._s.value_serde, context, False)

    def process(self, record: Record[Any, Any]) -> None:
        self._hash = None
        change: Change[Any] = record.value
        if self._s.use_versioned_semantics and not change.is_latest:
            _skip_out_of_order(self._context)
            return
        if self._s.left_join:
            self._left_join_instructions(record, change)
        else:
            self._inner_join_instructions(record, change)

    def _extract(self, key: Any, value: Any) -> Any:
        return self._s.foreign_key_extractor(key, value)

    def _left_join_instructions(self, record: Record[Any, Any], change: Change[Any]) -> None:
        # Kafka 4.1.1: every left update (not a delete of an absent row) subscribes to its new
        # foreign key, a null one included, so that a response always comes back for the left join
        if change.old_value is not None:
            old_fk = self._extract(record.key, change.old_value)
            new_fk = None if change.new_value is None else self._extract(record.key, change.new_value)
            if old_fk is not None and self._serialize(new_fk) != self._serialize(old_fk):
                self._forward(record, old_fk, Instruction.DELETE_KEY_NO_PROPAGATE)
            self._forward(record, new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
        elif change.new_value is not None:
            new_fk = self._extract(record.key, change.new_value)
            self._forward(record, new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)

    def _inner_join_instructions(self, record: Record[Any, Any], change: Change[Any]) -> None:
        if change.old_value is not None:
            old_fk = self._extract(record.key, change.old_value)
            new_fk = None if change.new_value is None else self._extract(record.key, change.new_value)
            if old_fk is None and new_fk is None:
                self._skip_null_foreign_key()
            elif old_fk is None:
                self._forward(record, new_fk, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
            elif new_fk is None:
                self._forward(record, old_fk, Instruction.DELETE_KEY_AND_PROPAGATE)
            elif self._serialize(new_fk) != self._serialize(old_fk):
                # the new subscription may live on another partition: unsubscribe the old one
                # explicitly, and have the new one clear the previous result if it finds nothing
                self._forward(record, old_fk, Instruction.DELETE_KEY_NO_PROPAGATE)
                self._forward(record, new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            else:
                self._forward(record, new_fk, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)
        elif change.new_value is not None:
            new_fk = self._extract(record.key, change.new_value)
            if new_fk is None:
                self._skip_null_foreign_key()
            else:
                self._forward(record, new_fk, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)

    def _serialize(self, foreign_key: Any) -> bytes | None:
        data: bytes | None = self._fk_serializer.serialize(self._fk_topic, foreign_key)
        return data

    def _forward(self, record: Record[Any, Any], foreign_key: Any, instruction: Instruction) -> None:
        metadata = self._context.record_metadata()
        partition = metadata.partition if metadata is not None else -1
        wrapper = SubscriptionWrapper(self._value_hash(record), instruction, record.key, partition)
        self._context.forward(record.with_key(foreign_key).with_value(wrapper))

    def _value_hash(self, record: Record[Any, Any]) -> tuple[int, int] | None:
        new_value = record.value.new_value
        if self._hash is None and new_value is not None:
            self._hash = hash128(self._value_serializer.serialize(self._value_topic, new_value))
        return self._hash

    def _skip_null_foreign_key(self) -> None:
        _log.warning("%s %s", _NULL_FK, self._context.record_metadata() or "")
        record_dropped(self._context, _NULL_FK)


class SubscriptionSendProcessorSupplier:
    """Kafka's ``SubscriptionSendProcessorSupplier`` (its ``UnbindChangeProcessor``)."""

    def __init__(
        self,
        foreign_key_extractor: Callable[[Any, Any], Any],
        foreign_key_topic: PseudoTopic,
        value_hash_topic: PseudoTopic,
        foreign_key_serde: Any,
        value_serde: Any,
        left_join: bool,
    ) -> None:
        self.foreign_key_extractor = foreign_key_extractor
        self.foreign_key_topic = foreign_key_topic
        self.value_hash_topic = value_hash_topic
        self.foreign_key_serde = foreign_key_serde
        self.value_serde = value_serde
        self.left_join = left_join
        # KIP-914: set at build time when the left table is versioned (versioned_semantics.py)
        self.use_versioned_semantics = False

    def __call__(self) -> Processor[Any, Any]:
        return _SubscriptionSend(self)


# -- right side: receive, store and answer subscriptions -----------------------------------------------


class _SubscriptionReceive(ContextualProcessor):
    def __init__(self, supplier: SubscriptionReceiveProcessorSupplier) -> None:
        self._s = supplier

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store: Any = context.get_state_store(self._s.store_name)
        self._s.subscription_serde.init_nullable(context)
        self._s.key_schema.init(context)

    def process(self, record: Record[Any, Any]) -> None:
        wrapper: SubscriptionWrapper = record.value
        if (
            record.key is None
            and wrapper.instruction is not Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE
        ):
            _log.warning("%s %s", _NULL_FK, self._context.record_metadata() or "")
            record_dropped(self._context, _NULL_FK)
            return
        new = ValueAndTimestamp.make(wrapper, record.timestamp)
        if record.key is None:
            # a left join's null foreign key: nothing to store, the answer is null
            change: Change[Any] = Change(new, None)
        else:
            store_key = self._s.key_schema.to_bytes(record.key, wrapper.primary_key)
            old = self._store.get(store_key)
            if wrapper.instruction in (
                Instruction.DELETE_KEY_AND_PROPAGATE,
                Instruction.DELETE_KEY_NO_PROPAGATE,
            ):
                self._store.delete(store_key)
            else:
                self._store.put(store_key, new)
            change = Change(new, old)
        self._context.forward(
            record.with_key(CombinedKey(record.key, wrapper.primary_key)).with_value(change)
        )


class SubscriptionReceiveProcessorSupplier:
    """Kafka's ``SubscriptionReceiveProcessorSupplier``: keeps the subscription store."""

    def __init__(
        self, store_name: str, key_schema: CombinedKeySchema, subscription_serde: SubscriptionWrapperSerde
    ) -> None:
        self.store_name = store_name
        self.key_schema = key_schema
        self.subscription_serde = subscription_serde

    def __call__(self) -> Processor[Any, Any]:
        return _SubscriptionReceive(self)


class _SubscriptionJoin(ContextualProcessor):
    def __init__(self, getter: KTableValueGetter) -> None:
        self._foreign_values = getter

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._foreign_values.init(context)

    def process(self, record: Record[Any, Any]) -> None:
        key: CombinedKey = record.key
        stamped: ValueAndTimestamp[SubscriptionWrapper] = record.value.new_value
        wrapper = stamped.value
        foreign = None if key.foreign_key is None else self._foreign_values.get(key.foreign_key)
        timestamp = stamped.timestamp if foreign is None else max(stamped.timestamp, foreign.timestamp)
        instruction = wrapper.instruction
        if instruction is Instruction.DELETE_KEY_AND_PROPAGATE:
            value: Any = None
        elif instruction is Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
            # the foreign key changed (or is null, for a left join): a missing right value must
            # still reach the left side, to clear (or left-join) the previous result
            value = None if foreign is None else foreign.value
        elif instruction is Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE:
            if foreign is None:
                return
            value = foreign.value
        else:  # DELETE_KEY_NO_PROPAGATE
            return
        response = SubscriptionResponseWrapper(wrapper.hash, value, wrapper.primary_partition)
        self._context.forward(record.with_key(key.primary_key).with_value(response).with_timestamp(timestamp))


class SubscriptionJoinProcessorSupplier:
    """Kafka's ``SubscriptionJoinProcessorSupplier``: looks up the right table for a subscription."""

    def __init__(self, foreign_value_getter_supplier: KTableValueGetterSupplier) -> None:
        self.foreign_value_getter_supplier = foreign_value_getter_supplier

    def __call__(self) -> Processor[Any, Any]:
        return _SubscriptionJoin(self.foreign_value_getter_supplier.get())


class _ForeignTableJoin(ContextualProcessor):
    def __init__(self, supplier: ForeignTableJoinProcessorSupplier) -> None:
        self._s = supplier

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store: Any = context.get_state_store(self._s.store_name)
        self._s.subscription_serde.init_nullable(context)
        self._s.key_schema.init(context)

    def process(self, record: Record[Any, Any]) -> None:
        if record.key is None:
            record_dropped(self._context, "Skipping record due to null key.")
            return
        if self._s.use_versioned_semantics and not record.value.is_latest:
            _skip_out_of_order(self._context)
            return
        prefix = self._s.key_schema.prefix_bytes(record.key)
        new_value = record.value.new_value
        with self._store.prefix_scan(prefix, _BYTES) as entries:
            for entry in entries:
                subscription: SubscriptionWrapper = entry.value.value
                primary_key = self._s.key_schema.from_bytes(entry.key).primary_key
                response = SubscriptionResponseWrapper(
                    subscription.hash, new_value, subscription.primary_partition
                )
                self._context.forward(record.with_key(primary_key).with_value(response))


class ForeignTableJoinProcessorSupplier:
    """Kafka's ``ForeignTableJoinProcessorSupplier``: a right update answers all its subscribers."""

    def __init__(
        self, store_name: str, key_schema: CombinedKeySchema, subscription_serde: SubscriptionWrapperSerde
    ) -> None:
        self.store_name = store_name
        self.key_schema = key_schema
        self.subscription_serde = subscription_serde
        # KIP-914: set at build time when the right table is versioned (versioned_semantics.py)
        self.use_versioned_semantics = False

    def __call__(self) -> Processor[Any, Any]:
        return _ForeignTableJoin(self)


# -- back on the left side: resolve responses --------------------------------------------------------


class _ResponseJoin(ContextualProcessor):
    def __init__(self, supplier: ResponseJoinProcessorSupplier) -> None:
        self._s = supplier
        self._getter = supplier.value_getter_supplier.get()

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._topic = self._s.value_hash_topic.resolve(context)
        self._getter.init(context)
        self._value_serializer = _serializer(self._s.value_serde, context, False)

    def process(self, record: Record[Any, Any]) -> None:
        response: SubscriptionResponseWrapper = record.value
        if response.version != 0:
            raise StreamsException("SubscriptionResponseWrapper is of an incompatible version.")
        current = self._getter.get(record.key)
        current_hash = (
            None if current is None else hash128(self._value_serializer.serialize(self._topic, current.value))
        )
        if response.original_value_hash != current_hash:
            # stale: the left row changed after this subscription was sent; its own response follows
            _log.debug("Dropping FK-join response due to hash mismatch")
            record_dropped(self._context, "FK-join response hash mismatch")
            return
        if response.foreign_value is None and (not self._s.left_join or current is None):
            result = None
        else:
            result = self._s.joiner(
                record.key, None if current is None else current.value, response.foreign_value
            )
        self._context.forward(record.with_value(result))


class ResponseJoinProcessorSupplier:
    """Kafka's ``ResponseJoinProcessorSupplier``: joins a fresh response with the left value."""

    def __init__(
        self,
        value_getter_supplier: KTableValueGetterSupplier,
        value_serde: Any,
        value_hash_topic: PseudoTopic,
        joiner: Callable[[Any, Any, Any], Any],
        left_join: bool,
    ) -> None:
        self.value_getter_supplier = value_getter_supplier
        self.value_serde = value_serde
        self.value_hash_topic = value_hash_topic
        self.joiner = joiner
        self.left_join = left_join

    def __call__(self) -> Processor[Any, Any]:
        return _ResponseJoin(self)
