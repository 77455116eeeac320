"""Which time mode an engine query's ``transformWithState`` operator runs in.

A Kafka Streams task fires its ``WALL_CLOCK_TIME`` punctuations whether or not records arrive.
On Spark an idle task runs only if the query has processing-time timers
(``TimeMode.ProcessingTime``), and with that time mode Spark runs a micro-batch every trigger,
input or not (``TransformWithStateExec.shouldRunAnotherBatch`` is always true): every task of
the query and every state store commit once a trigger, for as long as the application runs.
So a query asks for it only when one of its sub-topologies runs Processor API code, the only
code that can schedule a wall-clock punctuation (``SubtopologyPlan.wall_clock``).

Spark records the time mode in the query's checkpoint and refuses another one after a restart
(``STATE_STORE_INVALID_CONFIG_AFTER_RESTART``). A checkpoint written with processing-time timers
where none are needed now (by an earlier kspark, which used them for every continuous engine
query) keeps them: the results are the same, only the idle batches cost. The opposite, a
checkpoint without them where a task may now need them, is refused with what to do.
"""

from __future__ import annotations

import json
import os

from kspark.errors import StreamsException

__all__ = ["PROCESSING_TIME", "NO_TIME", "checkpoint_time_mode", "query_time_mode"]

PROCESSING_TIME = "ProcessingTime"
NO_TIME = "None"
# Spark's names in the operator metadata -> the names transformWithStateInPandas takes
_RECORDED = {"ProcessingTime": PROCESSING_TIME, "NoTime": NO_TIME}


def checkpoint_time_mode(checkpoint: str) -> str | None:
    """The time mode the query's ``transformWithState`` operator (operator 0) was last written
    with in ``checkpoint`` (Spark's operator metadata v2, ``state/0/_metadata/v2/<batch>``);
    None when nothing was written yet (or by an operator that has no time mode)."""
    directory = os.path.join(checkpoint, "state", "0", "_metadata", "v2")
    try:
        batches = [int(name) for name in os.listdir(directory) if name.isdigit()]
    except FileNotFoundError:
        return None
    if not batches:
        return None
    path = os.path.join(directory, str(max(batches)))
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    try:
        # line 1 is the format's version ("v2"), line 2 the operator's metadata as JSON
        properties = json.loads(json.loads(lines[1])["operatorPropertiesJson"])
        recorded = properties["timeMode"]
    except (IndexError, KeyError, TypeError, ValueError) as e:
        raise StreamsException(f"Cannot read the operator metadata of the checkpoint {path}: {e!r}") from e
    if recorded not in _RECORDED:
        raise StreamsException(f"The checkpoint {path} records an unknown time mode {recorded!r}")
    return _RECORDED[recorded]


def query_time_mode(query: str, checkpoint: str, wall_clock: list[str], continuous: bool) -> str:
    """The time mode of ``query``: processing time when it runs continuously and its
    sub-topologies ``wall_clock`` (their numbers, in words) may schedule a wall-clock
    punctuation; else no time, unless ``checkpoint`` was written with processing time (kept,
    see the module docstring). Refuses a checkpoint without timers that a task now needs."""
    wanted = PROCESSING_TIME if continuous and wall_clock else NO_TIME
    recorded = checkpoint_time_mode(checkpoint)
    if recorded is None or recorded == wanted:
        return wanted
    if recorded == PROCESSING_TIME:
        if continuous:
            return PROCESSING_TIME
        raise StreamsException(
            f"Query {query}: its checkpoint {checkpoint} was written by a continuous run with "
            "processing-time timers, which Spark cannot drop after a restart, and with them a run "
            "until the input is processed never ends: run it with start(), or reset the application"
        )
    raise StreamsException(
        f"Query {query}: sub-topologies {', '.join(wall_clock)} run Processor API code that may "
        "schedule a WALL_CLOCK_TIME punctuation, which needs processing-time timers on Spark, but "
        f"its checkpoint {checkpoint} was written without them (by process_available(), or before "
        "that code was added), and Spark cannot add them after a restart: reset the application "
        "(kspark reset) or use a new application.id"
    )
