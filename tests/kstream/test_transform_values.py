"""``KTable.transform_values``: what the catalog's Java comparison cannot show (errors, the
transformer's context, its lifecycle). Values and old values: tests/catalog ptv_* scenarios."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from kspark import Consumed, Materialized, StreamsBuilder, ValueTransformerWithKey
from kspark.errors import StreamsException
from kspark.processor.api import ProcessorContext, Record
from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver

S = Serdes.String()
CONFIG = {
    "application.id": "app",
    "bootstrap.servers": "dummy:9092",
    "default.key.serde": "string",
    "default.value.serde": "string",
}


class Stamp(ValueTransformerWithKey[str, str, str]):
    """``value@timestamp``, from the context the transformer was given."""

    closed: ClassVar[list[str]] = []

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def transform(self, read_only_key: str, value: str | None) -> str:
        return f"{value}@{self.context.timestamp()}"

    def close(self) -> None:
        Stamp.closed.append("closed")


def _table_to_out(supplier: Any, **kwargs: Any) -> StreamsBuilder:
    b = StreamsBuilder()
    b.table("in", Consumed.with_(S, S)).transform_values(supplier, **kwargs).to_stream().to("out")
    return b


def test_the_transformer_sees_the_record_context_and_is_closed_with_the_task() -> None:
    Stamp.closed.clear()
    b = _table_to_out(Stamp, materialized=Materialized.as_("stamped").with_value_serde(S))
    with TopologyTestDriver(b.build(), CONFIG) as d:
        d.create_input_topic("in", S, S).pipe_input("k", "v", timestamp=42)
        out = d.create_output_topic("out", S, S).read_records_to_list()
        assert [(r.key, r.value, r.timestamp) for r in out] == [("k", "v@42", 42)]
        assert d.get_key_value_store("stamped").get("k") == "v@42"
    assert Stamp.closed == ["closed"]


class Forwarding(ValueTransformerWithKey[str, str, str]):
    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def transform(self, read_only_key: str, value: str | None) -> str:
        self.context.forward(Record("other-key", value, 0))
        return "unreachable"


def test_forward_from_a_transformer_is_refused() -> None:
    with (
        TopologyTestDriver(_table_to_out(Forwarding).build(), CONFIG) as d,
        pytest.raises(StreamsException, match="forward\\(\\) is not supported"),
    ):
        d.create_input_topic("in", S, S).pipe_input("k", "v", timestamp=1)


def test_a_supplier_that_returns_no_transformer_is_named() -> None:
    with (
        pytest.raises(StreamsException, match="must return a ValueTransformerWithKey"),
        TopologyTestDriver(_table_to_out(lambda: None).build(), CONFIG) as d,
    ):
        d.create_input_topic("in", S, S).pipe_input("k", "v", timestamp=1)


def test_bad_arguments_fail_when_the_topology_is_built() -> None:
    table = StreamsBuilder().table("in", Consumed.with_(S, S))
    with pytest.raises(TypeError, match="transformer supplier"):
        table.transform_values("not callable")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="state store names must be str"):
        table.transform_values(Stamp, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="materialized must be a Materialized"):
        table.transform_values(Stamp, materialized="store")  # type: ignore[arg-type]


def test_an_unnamed_materialized_does_not_materialize() -> None:
    b = _table_to_out(Stamp, materialized=Materialized.with_(S, S))
    assert "TRANSFORMVALUES-0000000003 (stores: [])" in str(b.build().describe())
