"""Foreign-key table-table joins (KIP-213) on the TopologyTestDriver.

The catalog (tests/catalog/scenarios/ported_fk_joins.py) compares the
join with Java Kafka Streams record for record; these tests check what the
catalog cannot see: the API's shapes and errors, the internal topics and
stores it declares, stale responses, custom partitioners, the wrappers'
bytes (checked against Kafka 4.1.1's serdes) and the murmur3 hash.
"""

from __future__ import annotations

from typing import Any

import pytest

from kspark import Consumed, Materialized, Produced, StreamsBuilder, TableJoined
from kspark.kstream.internals.foreign_key_join.murmur3 import hash128
from kspark.kstream.internals.foreign_key_join.wrappers import (
    Instruction,
    PseudoTopic,
    SubscriptionResponseWrapper,
    SubscriptionResponseWrapperSerde,
    SubscriptionWrapper,
    SubscriptionWrapperSerde,
)
from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver

S = Serdes.String()
APP = {"application.id": "fk-test"}


def _fk(value: str) -> str | None:
    fk = value.split("|")[1]
    return None if fk == "none" else fk


def _joiner(left: Any, right: Any) -> str:
    return f"({left},{right})"


def _topology(left_join: bool = False, **options: Any) -> Any:
    b = StreamsBuilder()
    lt = b.table("l", Consumed.with_(S, S))
    rt = b.table("r", Consumed.with_(S, S))
    op = lt.left_join if left_join else lt.join
    op(rt, options.pop("extractor", _fk), options.pop("joiner", _joiner), **options).to_stream().to(
        "out", Produced.with_(S, S)
    )
    return b.build()


def _run(topology: Any, steps: list[tuple[str, str, str | None]]) -> tuple[list[tuple[Any, Any]], float]:
    with TopologyTestDriver(topology, APP) as d:
        inputs = {t: d.create_input_topic(t, S, S) for t in ("l", "r")}
        out = d.create_output_topic("out", S, S)
        for ts, (topic, key, value) in enumerate(steps, start=100):
            inputs[topic].pipe_input(key, value, ts)
        return [(kv.key, kv.value) for kv in out.read_key_values_to_list()], d.dropped_records_total()


def test_inner_join_follows_both_sides_and_foreign_key_changes() -> None:
    got, dropped = _run(
        _topology(),
        [
            ("r", "x", "X"),
            ("l", "a", "1|x"),
            ("l", "b", "2|x"),
            ("r", "x", "X2"),  # answers every subscriber
            ("l", "a", "3|y"),  # no right row for y: the old result is cleared
            ("r", "y", "Y"),
            ("r", "x", "X3"),  # a is no longer subscribed to x
            ("l", "b", None),
        ],
    )
    assert got == [
        ("a", "(1|x,X)"),
        ("b", "(2|x,X)"),
        ("a", "(1|x,X2)"),
        ("b", "(2|x,X2)"),
        ("a", None),
        ("a", "(3|y,Y)"),
        ("b", "(2|x,X3)"),
        ("b", None),
    ]
    assert dropped == 0


def test_left_join_keeps_rows_without_match_and_null_foreign_keys() -> None:
    got, dropped = _run(
        _topology(left_join=True),
        [("l", "a", "1|none"), ("l", "b", "2|x"), ("r", "x", "X"), ("r", "x", None), ("l", "a", None)],
    )
    assert got == [
        ("a", "(1|none,None)"),
        ("b", "(2|x,None)"),
        ("b", "(2|x,X)"),
        ("b", "(2|x,None)"),
        ("a", None),
    ]
    assert dropped == 0


def test_inner_join_drops_and_counts_null_foreign_keys() -> None:
    got, dropped = _run(_topology(), [("r", "x", "X"), ("l", "a", "1|none"), ("l", "a", "2|x")])
    assert got == [("a", "(2|x,X)")]
    assert dropped == 1


def test_extractor_and_joiner_may_take_the_key() -> None:
    got, _ = _run(
        _topology(extractor=lambda k, v: k.upper(), joiner=lambda k, lv, rv: f"{k}:{lv}+{rv}"),
        [("r", "A", "right"), ("l", "a", "left")],
    )
    assert got == [("a", "a:left+right")]


def test_named_join_declares_its_topics_stores_and_copartition_groups() -> None:
    topology = _topology(
        table_joined=TableJoined.as_("fk"), materialized=Materialized.as_("fk-result").with_value_serde(S)
    )
    builder = topology.internal_builder
    topics = builder.internal_topics()
    assert {t: p.kind for t, p in topics.items()} == {
        "fk-subscription-registration-topic": "repartition",
        "fk-subscription-response-topic": "repartition",
    }
    assert set(builder.state_store_names()) >= {"fk-subscription-store", "fk-result"}
    assert {
        "fk-subscription-registration-processor",
        "fk-subscription-registration-sink",
        "fk-subscription-registration-source",
        "fk-subscription-receive",
        "fk-subscription-join-foreign",
        "fk-foreign-join-subscription",
        "fk-subscription-response-sink",
        "fk-subscription-response-source",
        "fk-subscription-response-resolver",
        "fk-result",
    } <= set(builder.node_names())
    groups = [sorted(g) for g in builder.copartition_groups()]
    assert ["KSTREAM-SOURCE-0000000004", "fk-subscription-registration-source"] in groups
    assert ["KSTREAM-SOURCE-0000000001", "fk-subscription-response-source"] in groups
    with TopologyTestDriver(topology, APP) as d:
        d.create_input_topic("r", S, S).pipe_input("x", "X", 1)
        d.create_input_topic("l", S, S).pipe_input("a", "1|x", 2)
        assert d.get_key_value_store("fk-result").get("a") == "(1|x,X)"


def test_named_keyword_names_the_join() -> None:
    builder = _topology(named="nm").internal_builder
    assert "nm-subscription-response-topic" in builder.internal_topics()


def test_a_stale_response_is_dropped_and_counted() -> None:
    """A response for a left value that has changed since (its hash differs) is dropped
    (``ResponseJoinProcessorSupplierTest.shouldNotForwardWhenHashDoesNotMatch``)."""
    topology = _topology()
    response_serde = SubscriptionResponseWrapperSerde(S)
    with TopologyTestDriver(topology, APP) as d:
        d.create_input_topic("r", S, S).pipe_input("x", "X", 1)
        d.create_input_topic("l", S, S).pipe_input("a", "1|x", 2)
        out = d.create_output_topic("out", S, S)
        assert out.read_value() == "(1|x,X)"
        topic = "fk-test-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic"
        stale = SubscriptionResponseWrapper(hash128(b"0|x"), "X")
        d.pipe_raw(topic, 3, b"a", response_serde.serializer().serialize(topic, stale))
        assert out.is_empty()
        assert d.dropped_records_total() == 1
        fresh = SubscriptionResponseWrapper(hash128(b"1|x"), "fresh")
        d.pipe_raw(topic, 4, b"a", response_serde.serializer().serialize(topic, fresh))
        assert out.read_value() == "(1|x,fresh)"


def test_table_joined_partitioners_route_both_topics() -> None:
    calls: list[tuple[str, Any, Any, int]] = []

    def partitioner(topic: str, key: Any, value: Any, n: int) -> int:
        calls.append((topic, key, value, n))
        return 0

    got, _ = _run(
        _topology(table_joined=TableJoined.with_(partitioner, partitioner)),
        [("r", "x", "X"), ("l", "a", "1|x")],
    )
    assert got == [("a", "(1|x,X)")]
    assert [c[1:] for c in calls] == [("x", None, 1), ("a", None, 1)]  # called with value None, as Kafka


def test_a_partitioner_naming_several_partitions_is_an_error() -> None:
    with pytest.raises(Exception, match="singleton"):
        _run(_topology(table_joined=TableJoined.with_(None, lambda t, k, v, n: [0, 1])), [("l", "a", "1|x")])


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda lt, rt: lt.join(rt, None, _joiner), ValueError, "foreign_key_extractor can't be None"),
        (lambda lt, rt: lt.join("r", _fk, _joiner), TypeError, "needs a KTable"),
        (lambda lt, rt: lt.join(rt, _fk, _joiner, "name"), TypeError, "table_joined must be a TableJoined"),
        (lambda lt, rt: lt.outer_join(rt, _fk, _joiner), TypeError, "foreign-key join and left_join only"),
        (lambda lt, rt: lt.left_join(rt, _fk, _joiner, bogus=1), TypeError, "unexpected keyword"),
        (
            lambda lt, rt: lt.join(rt, _fk, _joiner, TableJoined.as_("a"), named="b"),
            ValueError,
            "disagree",
        ),
        (lambda lt, rt: TableJoined.with_("p", None), TypeError, "must be callable"),  # type: ignore[arg-type]
    ],
)
def test_bad_arguments_are_named(call: Any, error: type[Exception], match: str) -> None:
    b = StreamsBuilder()
    lt, rt = b.table("l", Consumed.with_(S, S)), b.table("r", Consumed.with_(S, S))
    with pytest.raises(error, match=match):
        call(lt, rt)


def test_key_joins_keep_their_shape() -> None:
    b = StreamsBuilder()
    lt, rt = b.table("l", Consumed.with_(S, S)), b.table("r", Consumed.with_(S, S))
    lt.join(rt, _joiner, "kj", Materialized.as_("kj-store").with_value_serde(S)).to_stream().to(
        "out", Produced.with_(S, S)
    )
    with TopologyTestDriver(b.build(), APP) as d:
        d.create_input_topic("r", S, S).pipe_input("a", "R", 1)
        d.create_input_topic("l", S, S).pipe_input("a", "L", 2)
        assert d.create_output_topic("out", S, S).read_value() == "(L,R)"
        assert d.get_key_value_store("kj-store").get("a") == "(L,R)"


# Bytes printed by Kafka 4.1.1's SubscriptionWrapperSerde / SubscriptionResponseWrapperSerde (String
# inner serdes) for the same wrappers.
JAVA_BYTES = [
    (
        SubscriptionWrapper((1, -2), Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE, "pk", 5),
        "01030000000000000001fffffffffffffffe706b00000005",
    ),
    (SubscriptionWrapper(None, Instruction.DELETE_KEY_AND_PROPAGATE, "pk", 0), "8101706b00000000"),
    (SubscriptionResponseWrapper((3, 4), "fv", 7), "00000000000000000300000000000000046676"),
    (SubscriptionResponseWrapper(None, None, 7), "80"),
]


@pytest.mark.parametrize(("wrapper", "hex_bytes"), JAVA_BYTES)
def test_wrappers_have_kafkas_bytes(wrapper: Any, hex_bytes: str) -> None:
    serde: Any = (
        SubscriptionWrapperSerde(PseudoTopic("t"), S)
        if isinstance(wrapper, SubscriptionWrapper)
        else SubscriptionResponseWrapperSerde(S)
    )
    data = serde.serializer().serialize("x", wrapper)
    assert data.hex() == hex_bytes
    back = serde.deserializer().deserialize("x", data)
    if isinstance(wrapper, SubscriptionResponseWrapper):
        wrapper = SubscriptionResponseWrapper(
            wrapper.original_value_hash, wrapper.foreign_value
        )  # not serialized
    assert back == wrapper


# Murmur3.hash128 of these strings' bytes, printed by Kafka 4.1.1
JAVA_HASHES = [
    ("", (-7122613646888064702, -8341524471658347240)),
    ("a", (3702349557448790408, -1601067453332442517)),
    ("abcdefgh", (-3899774358444468009, -7475653065840408363)),
    ("abcdefghi", (5468294767348829347, 9107382057419093116)),
    ("0123456789abcdef", (1904622552327088487, -2893518741649893711)),
    ("0123456789abcdefXYZ_long_string_here_1234", (4836407233974108906, -8716865161264481783)),
]


@pytest.mark.parametrize(("text", "expected"), JAVA_HASHES)
def test_murmur3_hash128_is_kafkas(text: str, expected: tuple[int, int]) -> None:
    assert hash128(text.encode()) == expected
