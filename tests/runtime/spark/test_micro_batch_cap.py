"""Which micro-batch cap each kind of sub-topology's query gets (``maxOffsetsPerTrigger``)."""

from __future__ import annotations

import pytest

from kspark import TimeWindows
from kspark.errors import ConfigException
from kspark.runtime.spark.lowering import NativeCount
from kspark.runtime.spark.runner import STATEFUL_RECORDS_PER_TASK, SubtopologyPlan, micro_batch_cap

COUNT = NativeCount("count", True, None)
WINDOWED = NativeCount("count", True, None, TimeWindows.of_size_with_no_grace(1000))


def _plan(
    topics: tuple[str, ...] = ("in",), stateful: bool = True, native: NativeCount | None = None
) -> SubtopologyPlan:
    return SubtopologyPlan(0, topics, stateful, "q", native)


def test_a_stage_that_holds_its_tasks_batches_in_python_is_capped_per_task() -> None:
    assert micro_batch_cap(_plan(), None, 4) == 4 * STATEFUL_RECORDS_PER_TASK
    assert micro_batch_cap(_plan(native=WINDOWED), None, 2) == 2 * STATEFUL_RECORDS_PER_TASK


def test_streaming_stages_and_sparks_own_count_are_not_capped() -> None:
    assert micro_batch_cap(_plan(stateful=False), None, 4) is None
    assert micro_batch_cap(_plan(native=COUNT), None, 4) is None


def test_the_configured_cap_wins() -> None:
    assert micro_batch_cap(_plan(), "1000", 4) == 1000
    assert micro_batch_cap(_plan(stateful=False), 500, 4) == 500


def test_a_sub_topology_reading_several_topics_is_never_capped() -> None:
    # Spark would split the cap by lag and let a join's table topic trail its stream.
    assert micro_batch_cap(_plan(("stream", "table")), None, 2) is None
    assert micro_batch_cap(_plan(("stream", "table")), 1000, 2) is None


@pytest.mark.parametrize("bad", ["abc", "0", "-5", "1e6", "1000.5", 2.5, True])
def test_a_cap_that_is_not_a_positive_integer_is_refused_by_name(bad: object) -> None:
    with pytest.raises(
        ConfigException, match=r"spark\.kspark\.maxOffsetsPerTrigger must be a positive integer"
    ):
        micro_batch_cap(_plan(), bad, 2)
    with pytest.raises(ConfigException):  # also where it would be ignored: the setting is wrong anyway
        micro_batch_cap(_plan(("stream", "table")), bad, 2)
