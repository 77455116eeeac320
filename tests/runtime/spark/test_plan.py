"""The physical plan: which stage each sub-topology gets and why, how queries group them, their caps.

These run without Spark or Kafka: the plan is made from the topology and its
config alone (partition counts given where the test needs task counts).
"""

from __future__ import annotations

import operator
from typing import Any

import pytest

from kspark import (
    Consumed,
    KeyValue,
    Materialized,
    Produced,
    StreamsBuilder,
    TimeWindows,
    Topology,
    ValueTransformerWithKey,
)
from kspark.errors import ConfigException
from kspark.processor import FixedKeyProcessor, Processor, Record
from kspark.runtime.spark.plan import STATEFUL_RECORDS_PER_TASK, Stage, physical_plan
from kspark.runtime.spark.settings import SETTINGS, RunnerSettings
from kspark.serde import Serdes
from kspark.state import Stores

S, L, J = Serdes.String(), Serdes.Long(), Serdes.JSON()
APP = "app"


def _config(**extra: Any) -> dict[str, Any]:
    return {"application.id": APP, "bootstrap.servers": "127.0.0.1:9", **extra}


def _stateless(b: StreamsBuilder, src: str, dst: str) -> None:
    b.stream(src, Consumed.with_(S, S)).filter(lambda k, v: v != "x").map_values(str.upper).to(
        dst, Produced.with_(S, S)
    )


def _count(b: StreamsBuilder, src: str, dst: str, value: Any = S) -> None:
    b.stream(src, Consumed.with_(S, value)).group_by_key().count().to_stream().to(dst, Produced.with_(S, L))


def _mixed() -> Topology:
    """Two stateless sub-topologies, a native count, a JSON count (engine), a windowed count, and a
    group_by whose repartition topic feeds a count one level down."""
    b = StreamsBuilder()
    _stateless(b, "a", "a-out")
    _count(b, "b", "b-out")
    _count(b, "c", "c-out", J)
    b.stream("d", Consumed.with_(S, S)).group_by(lambda k, v: v).count().to_stream().to(
        "d-out", Produced.with_(S, L)
    )
    b.stream("e", Consumed.with_(S, S)).group_by_key().windowed_by(
        TimeWindows.of_size_with_no_grace(1000)
    ).count().to_stream().map(lambda k, v: KeyValue(k.key, v)).to("e-out", Produced.with_(S, L))
    _stateless(b, "f", "f-out")
    return b.build()


def _stages(topology: Topology, **config: Any) -> dict[int, tuple[str, bool]]:
    plan = physical_plan(topology, _config(**config))
    return {s.subtopology: (s.stage.name, s.fused) for s in plan.subtopologies}


def test_each_sub_topology_gets_the_stage_its_operations_allow() -> None:
    assert _stages(_mixed()) == {
        0: ("DIRECT_READ", True),
        1: ("NATIVE_COUNT", True),
        2: ("ENGINE", False),
        3: ("DIRECT_READ", True),  # the group_by's first half: select key, repartition
        4: ("ENGINE", False),  # the count behind the repartition topic: no key serde to lower with
        5: ("NATIVE_WINDOWED_COUNT", True),
        6: ("DIRECT_READ", True),
    }


def test_settings_and_the_cache_switch_stages_and_the_plan_says_why() -> None:
    assert _stages(_mixed(), **{"spark.kspark.directRead": "false"})[0] == ("SPARK_SOURCE", True)
    off = physical_plan(_mixed(), _config(**{"spark.kspark.nativeLowering": False}))
    assert off.subtopology(1).stage is Stage.ENGINE
    assert "native lowering: no (spark.kspark.nativeLowering is false)" in map(
        str, off.subtopology(1).decisions
    )
    no_cache = physical_plan(_mixed(), _config(**{"statestore.cache.max.bytes": 0}))
    assert {s.stage for s in no_cache.subtopologies if s.stateful} == {Stage.ENGINE}
    assert "the record cache is off" in str(no_cache.subtopology(5).decisions[0])
    json_count = physical_plan(_mixed(), _config()).subtopology(2)
    assert str(json_count.decisions[0]) == (
        "native lowering: no (value deserializer JsonDeserializer is not String or ByteArray)"
    )


def test_a_reduce_spark_has_is_lowered_and_a_lambda_is_not() -> None:
    def reduce(reducer: Any) -> Topology:
        b = StreamsBuilder()
        b.stream("in", Consumed.with_(S, L)).group_by_key().reduce(reducer).to_stream().to(
            "out", Produced.with_(S, L)
        )
        return b.build()

    assert _stages(reduce(operator.add)) == {0: ("NATIVE_REDUCE", True)}
    plan = physical_plan(reduce(lambda a, v: a + v), _config())
    assert plan.subtopology(0).stage is Stage.ENGINE
    assert "the reducer is not operator.add, min or max" in str(plan.subtopology(0).decisions[0])


class _Upper(Processor[str, str]):
    def process(self, record: Record[str, str]) -> None:
        self.context().forward(record.with_value(record.value.upper()))


def test_what_blocks_a_fused_chain_is_named() -> None:
    b = StreamsBuilder()
    branches = b.stream("in", Consumed.with_(S, S)).split().branch(lambda k, v: True).default_branch()
    for i, stream in enumerate(branches.values()):
        stream.to(f"out{i}", Produced.with_(S, S))
    (sub,) = physical_plan(b.build(), _config()).subtopologies
    assert sub.stage is Stage.DIRECT_READ and not sub.fused
    assert str(sub.decisions[1]) == (
        "fused chain: no (KSTREAM-BRANCH-0000000001 (_Branch) is not a fusable DSL operator)"
    )

    t = Topology()
    t.add_source("src", "in", key_deserializer=S, value_deserializer=S)
    t.add_processor("upper", _Upper, "src")
    t.add_sink("sink", "out", "upper", key_serializer=S, value_serializer=S)
    (sub,) = physical_plan(t, _config()).subtopologies
    assert str(sub.decisions[1]) == "fused chain: no (upper (_Upper) is not a fusable DSL operator)"


def test_independent_sub_topologies_of_one_stage_and_level_share_a_query() -> None:
    partitions = {"a": 2, "b": 3, "c": 1, "d": 2, "e": 4, "f": 2}
    plan = physical_plan(_mixed(), _config(), partitions)
    queries = {q.name: ([s.subtopology for s in q.subtopologies], q.stage, q.level) for q in plan.queries}
    assert queries == {
        "app-subtopologies-0-3-6": ([0, 3, 6], Stage.DIRECT_READ, 0),
        "app-subtopology-1": ([1], Stage.NATIVE_COUNT, 0),
        "app-subtopology-2": ([2], Stage.ENGINE, 0),
        "app-subtopology-5": ([5], Stage.NATIVE_WINDOWED_COUNT, 0),
        "app-subtopology-4": ([4], Stage.ENGINE, 1),
    }
    assert [[q.name for q in level] for level in plan.levels()][1] == ["app-subtopology-4"]
    # the repartition topic, not created yet, gets the largest source topic's partitions (4)
    assert plan.subtopology(4).tasks == 4
    assert plan.query_of(3).tasks == 6


def test_engine_sub_topologies_share_a_query_with_tasks_numbered_across_it() -> None:
    b = StreamsBuilder()
    _count(b, "x", "x-out", J)
    _count(b, "y", "y-out", J)
    plan = physical_plan(b.build(), _config(), {"x": 2, "y": 3})
    (query,) = plan.queries
    assert query.stage is Stage.ENGINE and query.tasks == 5
    assert query.task_bases() == {0: 0, 1: 2}
    assert query.max_offsets_per_trigger == 5 * STATEFUL_RECORDS_PER_TASK


def test_caps_follow_the_stage_and_a_join_is_never_capped() -> None:
    b = StreamsBuilder()
    table = b.table("t", Consumed.with_(S, S))
    b.stream("s", Consumed.with_(S, S)).join(table, lambda v, tv: v + tv).to("j", Produced.with_(S, S))
    _count(b, "c", "c-out", J)
    partitions = {"t": 2, "s": 2, "c": 2}
    (query,) = physical_plan(b.build(), _config(), partitions).queries  # one engine query
    assert query.max_offsets_per_trigger is None
    assert "reads several topics" in query.cap
    capped = physical_plan(_mixed(), _config(**{"spark.kspark.maxOffsetsPerTrigger": "1000"}), partitions)
    assert {q.max_offsets_per_trigger for q in capped.queries} == {1000}
    default = physical_plan(_mixed(), _config(), {"a": 2, "b": 2, "c": 2, "d": 2, "e": 2, "f": 2})
    caps = {q.name: q.max_offsets_per_trigger for q in default.queries}
    assert caps["app-subtopologies-0-3-6"] is None  # streams its input
    assert caps["app-subtopology-1"] is None  # Spark's own aggregation
    assert caps["app-subtopology-2"] == 2 * STATEFUL_RECORDS_PER_TASK
    assert caps["app-subtopology-5"] == 2 * STATEFUL_RECORDS_PER_TASK


def test_a_topic_cycle_is_broken_at_the_edge_back_to_a_lower_sub_topology() -> None:
    b = StreamsBuilder()
    b.stream("loop", Consumed.with_(S, S)).filter(lambda k, v: len(v) < 3).map_values(lambda v: v + "!").to(
        "mid", Produced.with_(S, S)
    )
    b.stream("mid", Consumed.with_(S, S)).to("loop", Produced.with_(S, S))
    plan = physical_plan(b.build(), _config())
    assert {s.subtopology: s.level for s in plan.subtopologies} == {0: 0, 1: 1}


def test_the_text_names_queries_decisions_and_settings() -> None:
    text = str(physical_plan(_mixed(), _config(**{"spark.kspark.spillRows": 10})))
    assert "Query app-subtopology-2 [engine tasks], level 0" in text
    assert "native lowering: no (value deserializer JsonDeserializer is not String or ByteArray)" in text
    assert "partition counts not known here" in text
    assert "Settings: spark.kspark.spillRows=10" in text


def test_plans_compare_equal_when_they_run_the_same_way() -> None:
    assert physical_plan(_mixed(), _config()) == physical_plan(_mixed(), _config())
    assert physical_plan(_mixed(), _config()) != physical_plan(
        _mixed(), _config(**{"spark.kspark.directRead": False})
    )
    assert physical_plan(_mixed(), _config()).summary().splitlines()[0] == "0: direct read, fused"


# ---------------------------------------------------------------- settings
def test_an_unknown_setting_is_refused_naming_the_closest_known_one() -> None:
    with pytest.raises(
        ConfigException, match=r"'spark\.kspark\.nativeLowring'; did you mean spark\.kspark\.nativeLowering\?"
    ):
        RunnerSettings.of(_config(**{"spark.kspark.nativeLowring": "false"}))
    with pytest.raises(ConfigException, match=r"did you mean spark\.kspark\.maxOffsetsPerTrigger\?"):
        RunnerSettings.of(_config(**{"spark.kspark.maxoffsetspertrigger": 10}))
    with pytest.raises(ConfigException, match=r"Unknown kspark setting 'spark\.kspark\.zzz' \(known: "):
        RunnerSettings.of(_config(**{"spark.kspark.zzz": 1}))


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("spark.kspark.maxOffsetsPerTrigger", "1e6", "must be a positive integer, got '1e6'"),
        ("spark.kspark.maxOffsetsPerTrigger", 0, "must be a positive integer, got 0"),
        ("spark.kspark.maxOffsetsPerTrigger", True, "must be a positive integer, got True"),
        ("spark.kspark.spillRows", 2.5, "must be a positive integer, got 2.5"),
        ("spark.kspark.directRead", "yes", "must be true or false, got 'yes'"),
        ("spark.kspark.nativeLowering", 1, "must be true or false, got 1"),
        ("spark.kspark.processingNice", 20, "must be a nice value from 1 to 19, got 20"),
        ("spark.kspark.processingNice", "-5", "must be a nice value from 1 to 19, got '-5'"),
        ("spark.kspark.queryServerProcess", "no", "must be true or false, got 'no'"),
    ],
)
def test_a_value_of_the_wrong_type_names_the_key_and_the_value(key: str, value: Any, message: str) -> None:
    with pytest.raises(ConfigException) as info:
        RunnerSettings.of(_config(**{key: value}))
    assert str(info.value) == f"{key} {message}"
    assert "\n" not in str(info.value)


def test_settings_parse_their_types_and_report_what_differs_from_the_defaults() -> None:
    settings = RunnerSettings.of(
        _config(**{"spark.kspark.maxOffsetsPerTrigger": "500", "spark.kspark.directRead": "FALSE"})
    )
    assert settings == RunnerSettings(max_offsets_per_trigger=500, direct_read=False)
    assert RunnerSettings.of(_config(**{"spark.kspark.processingNice": " 10"})).processing_nice == 10
    assert settings.given() == {"spark.kspark.maxOffsetsPerTrigger": 500, "spark.kspark.directRead": False}
    # every setting is a field, and every field a setting
    assert {s.field for s in SETTINGS} == set(RunnerSettings.__dataclass_fields__)
    assert {s.field: s.default for s in SETTINGS} == {
        name: f.default for name, f in RunnerSettings.__dataclass_fields__.items()
    }


def test_materialized_stores_are_listed_in_the_plan() -> None:
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, J)).group_by_key().count(Materialized.as_("counts")).to_stream().to(
        "out", Produced.with_(S, L)
    )
    (sub,) = physical_plan(b.build(), _config()).subtopologies
    assert sub.stores == ("counts",)


class _KeepValue(ValueTransformerWithKey[str, str, str]):
    def transform(self, read_only_key: str, value: str | None) -> str | None:
        return value


class _SameValue(FixedKeyProcessor[str, str]):
    def process(self, record: Record[str, str]) -> None:
        self.context().forward(record)


def _wall_clock(topology: Topology) -> dict[int, tuple[bool, str]]:
    """Sub-topology -> (wall_clock, its decision) for the engine sub-topologies."""
    plan = physical_plan(topology, _config())
    return {
        s.subtopology: (s.wall_clock, str(d))
        for s in plan.subtopologies
        for d in s.decisions
        if d.optimisation == "wall-clock punctuation"
    }


def test_only_processor_api_code_gets_processing_time_timers() -> None:
    # DSL operators only (an engine count of JSON values, a stream-table join): no timers, so
    # Spark runs their micro-batches only when there is input.
    b = StreamsBuilder()
    _count(b, "c", "c-out", J)
    table = b.table("t", Consumed.with_(S, S))
    b.stream("s", Consumed.with_(S, S)).join(table, lambda v, t: v + t).to("j-out", Produced.with_(S, S))
    no = "wall-clock punctuation: no (no Processor API code: a micro-batch runs only when there is input)"
    assert _wall_clock(b.build()) == {0: (False, no), 1: (False, no)}

    # Each way Processor API code enters a topology makes its sub-topology keep timers.
    b = StreamsBuilder()
    b.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("ps"), S, S))
    b.stream("p", Consumed.with_(S, S)).process(_Upper, "ps", named="upper").to("p-out")
    b.stream("v", Consumed.with_(S, S)).process_values(_SameValue, named="same").group_by_key().count()
    b.table("t", Consumed.with_(S, S)).transform_values(
        _KeepValue, named="keep"
    ).to_stream().group_by_key().count()
    found = _wall_clock(b.build())
    assert [(on, d.split(" may")[0]) for on, d in found.values()] == [
        (True, "wall-clock punctuation: yes (upper"),
        (True, "wall-clock punctuation: yes (same"),
        (True, "wall-clock punctuation: yes (keep"),
    ]
    t = Topology()
    t.add_source("src", "in", key_deserializer=S, value_deserializer=S)
    t.add_processor("upper", _Upper, "src")
    t.add_state_store(Stores.key_value_store_builder(Stores.in_memory_key_value_store("s"), S, S), "upper")
    assert _wall_clock(t) == {
        0: (
            True,
            "wall-clock punctuation: yes (upper may schedule it: a micro-batch every trigger, input or not)",
        )
    }
