"""Foreign-key table-table joins (KIP-213), ported from Kafka Streams' FK join tests.

Source: ``KTableKTableForeignKeyJoinIntegrationTest`` (which runs on the
TopologyTestDriver): a left table of ``"<value>|<foreign key>"`` strings
joined with a right table, ``joiner = "(" + left + "," + right + ")"``, the
result written to ``out`` (and, for the ``rejoin`` cases, the result joined
back with the left table on the key, to ``rejoin``). Kafka's ``baseTimestamp``
becomes 1000. Each scenario runs as an inner and as a left join; Kafka's
main ``Materialized`` disables caching (so its tests see every tombstone),
and one scenario of each kind keeps the default cache. Names a scenario
chooses itself (stores, ``TableJoined`` names) carry its own prefix, so all
share one Spark application.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kspark import Consumed, Materialized, Produced, StreamsBuilder
from kspark.kstream.table_joined import TableJoined

from ..model import Build, P, Scenario, Step, Topics
from .ported_support import SS, S, j, ported

__all__ = ["SCENARIOS"]

T0 = 1000
CLS = "KTableKTableForeignKeyJoinIntegrationTest"


def _joiner(v1: Any, v2: Any) -> str:
    return "(" + j(v1) + "," + j(v2) + ")"


def _rejoiner(v1: Any, v2: Any) -> str:
    return "rejoin(" + j(v1) + "," + j(v2) + ")"


def _bar(value: str) -> str:
    return value.split("|")[1]


def _null(value: str) -> None:
    return None


def _return_null(value: str) -> str | None:
    fk = value.split("|")[1]
    return None if fk == "returnNull" else fk


def _with_key(key: str, value: str) -> str:
    # Kafka 4.0's BiFunction extractor (KIP-1104): the key is passed too
    return value.split("|")[1] if "|" in value else key


EXTRACTORS: dict[str, Callable[..., Any]] = {
    "bar": _bar,
    "null": _null,
    "returnNull": _return_null,
    "withKey": _with_key,
}


def fk_join(
    left: bool,
    *,
    store: str | None = None,
    caching: bool = False,
    rejoin: bool = False,
    extractor: str = "bar",
    name: str | None = None,
) -> Build:
    """``left.[left]join(right, extractor, joiner, [TableJoined.as(name),] materialized)`` to ``out``.

    ``store``: the result is materialized in that named store (else only the value serde is
    given); ``caching``: keep the store's cache (Kafka's test disables it); ``rejoin``: the result
    is [left-]joined with the left table on the key, to ``rejoin``.
    """

    def build(b: StreamsBuilder, t: Topics) -> None:
        lt = b.table(t["l"], Consumed.with_(S, S))
        rt = b.table(t["r"], Consumed.with_(S, S))
        m = Materialized.with_(None, S) if store is None else Materialized.as_(store).with_value_serde(S)
        if not caching:
            m = m.with_caching_disabled()
        op = lt.left_join if left else lt.join
        fn = EXTRACTORS[extractor]
        joined = op(rt, fn, _joiner, m) if name is None else op(rt, fn, _joiner, TableJoined.as_(name), m)
        joined.to_stream().to(t["out"], Produced.with_(S, S))
        if rejoin:
            rm = (
                Materialized.with_(None, S)
                if store is None
                else Materialized.as_(store + "-rejoin").with_value_serde(S).with_caching_disabled()
            )
            (joined.left_join if left else joined.join)(lt, _rejoiner, rm).to_stream().to(
                t["rejoin"], Produced.with_(S, S)
            )

    return build


def _l(key: str, value: str | None, dt: int) -> Step:
    return P("l", key, value, T0 + dt)


def _r(key: str, value: str | None, dt: int) -> Step:
    return P("r", key, value, T0 + dt)


LEFT_THEN_DELETE_LEFT = [
    _r("rhs1", "rhsValue1", 0),
    _r("rhs2", "rhsValue2", 1),
    _r("rhs3", "rhsValue3", 2),
    _l("lhs1", "lhsValue1|rhs1", 3),
    _l("lhs2", "lhsValue2|rhs2", 4),
    _l("lhs3", "lhsValue3|rhs1", 5),
    _l("lhs1", None, 6),
]
RIGHT_THEN_DELETE_RIGHT = [
    _l("lhs1", "lhsValue1|rhs1", 0),
    _l("lhs2", "lhsValue2|rhs2", 1),
    _l("lhs3", "lhsValue3|rhs1", 2),
    _r("rhs1", "rhsValue1", 3),
    _r("rhs2", "rhsValue2", 4),
    _r("rhs3", "rhsValue3", 5),
    _r("rhs1", None, 6),
]
DELETE_NON_JOINING = [_l("lhs1", "lhsValue1|rhs1", 0), _l("lhs1", None, 1), _l("lhs1", None, 2)]
DELETE_NON_EXISTING = [_l("lhs1", None, 0)]
NON_MATCHING_FK = [
    _l("lhs1", "lhsValue1|rhs1", 0),
    _l("lhs1", "lhsValue1|rhs2", 1),
    _l("lhs1", "lhsValue1|rhs3", 2),
    _r("rhs1", "rhsValue1", 3),
    _l("lhs1", "lhsValue1|rhs1", 4),
    _l("lhs1", "lhsValue1|rhs2", 5),
]
UNSUBSCRIBE = [
    _r("rhs1", "rhsValue1", 0),
    _r("rhs2", "rhsValue2", 1),
    _l("lhs1", "lhsValue1|rhs1", 2),
    _l("lhs1", "lhsValue1|rhs2", 3),
    _r("rhs1", "rhsValue1Delta", 4),
]
NULL_FK = [_l("lhs1", "lhsValue1|rhs1", 0)]
OLD_NEW_FK_DIFFER = [_l("lhs1", "lhsValue1|rhs1", 0), _l("lhs1", "lhsValue1|returnNull", 0)]
# not in Kafka's tests: one left key changing its foreign key and value back and forth, right updates
# in between, a right delete and re-insert, and a null left key (dropped by the table source); in a
# micro-batch every response but the last of a left key is stale and is dropped
CHURN = [
    _r("rhs1", "r1", 0),
    _l("lhs1", "a|rhs1", 1),
    _l("lhs1", "b|rhs2", 2),
    _l("lhs1", "c|rhs1", 3),
    _r("rhs2", "r2", 4),
    _l("lhs2", "d|rhs2", 5),
    _l("lhs1", "e|rhs2", 6),
    _r("rhs2", "r2b", 7),
    _r("rhs1", None, 8),
    _l("lhs2", "f|rhs1", 9),
    _r("rhs1", "r1b", 10),
    _l("lhs3", "g|rhs1", 11),
    P("l", None, "h|rhs1", T0 + 12),
    _l("lhs2", None, 13),
    _r("rhs1", "r1c", 14),
]
# the BiFunction extractor (KIP-1104): a value without "|" joins on its own key
WITH_KEY = [
    _r("k1", "rk1", 0),
    _r("rhs1", "r1", 1),
    _l("k1", "self", 2),
    _l("k2", "x|rhs1", 3),
    _l("k1", "y|rhs1", 4),
    _r("rhs1", "r1b", 5),
    _l("k2", "self", 6),
    _r("k2", "rk2", 7),
]

IO = {"l": SS, "r": SS}
OUT = {"out": SS}
REJOIN_OUT = {"out": SS, "rejoin": SS}


def _pair(
    base: str,
    steps: list[Step],
    doc: str,
    *,
    rejoin: bool = False,
    store: bool = True,
    **options: Any,
) -> list[Scenario]:
    """The scenario as an inner and as a left join (``pfk_<base>_inner`` / ``_left``)."""
    out = []
    for left in (False, True):
        kind = "left" if left else "inner"
        name = f"pfk_{base}_{kind}"
        opts = dict(options)
        if opts.get("name"):
            opts["name"] = f"{opts['name']}-{kind}"  # names of its own, per scenario
        build = fk_join(left, store=f"{name}-store" if store else None, rejoin=rejoin, **opts)
        out.append(ported(name, build, IO, REJOIN_OUT if rejoin else OUT, steps, doc, java=name))
    return out


SCENARIOS: list[Scenario] = [
    *_pair(
        "left_delete",
        LEFT_THEN_DELETE_LEFT,
        f"{CLS}.doJoinFromLeftThenDeleteLeftEntity: right rows first; left rows join as they arrive "
        "(two to one foreign key, one right row never referenced); a left delete is a tombstone.",
    ),
    *_pair(
        "left_delete_rejoin",
        LEFT_THEN_DELETE_LEFT,
        f"{CLS}.doJoinFromLeftThenDeleteLeftEntity (rejoin): the FK-join result joined back with the "
        "left table on the key, so the result table is read through a value getter.",
        rejoin=True,
    ),
    *_pair(
        "right_delete",
        RIGHT_THEN_DELETE_RIGHT,
        f"{CLS}.doJoinFromRightThenDeleteRightEntity: left rows first (a left join emits them with "
        "null); right rows answer every subscriber (prefix scan); a right delete is a tombstone, or "
        "(left join) a join with null.",
    ),
    *_pair(
        "right_delete_unmaterialized",
        RIGHT_THEN_DELETE_RIGHT,
        f"{CLS}.doJoinFromRightThenDeleteRightEntity (materialized=false): the result keeps a "
        "generated store name and is not materialized.",
        store=False,
    ),
    *_pair(
        "tombstone_non_joining",
        DELETE_NON_JOINING,
        f"{CLS}.shouldEmitTombstoneWhenDeletingNonJoiningRecords: deleting a left row that never "
        "joined still emits a tombstone (the left side cannot know); deleting it again does not.",
    ),
    *_pair(
        "no_tombstone_non_existing",
        DELETE_NON_EXISTING,
        f"{CLS}.shouldNotEmitTombstonesWhenDeletingNonExistingRecords: a delete of an absent left "
        "row sends nothing.",
    ),
    *_pair(
        "non_matching_fk",
        NON_MATCHING_FK,
        f"{CLS}.joinShouldProduceNullsWhenValueHasNonMatchingForeignKey: changing to a foreign key "
        "with no right row emits a tombstone (inner) or a join with null (left).",
    ),
    *_pair(
        "unsubscribe",
        UNSUBSCRIBE,
        f"{CLS}.shouldUnsubscribeOldForeignKeyIfLeftSideIsUpdated: after the foreign key changes, "
        "updates of the old right row no longer reach the left row.",
    ),
    ported(
        "pfk_null_fk_left",
        fk_join(True, store="pfk_null_fk_left-store", extractor="null"),
        IO,
        OUT,
        NULL_FK,
        f"{CLS}.shouldEmitRecordOnNullForeignKeyForLeftJoins: a left join emits a row whose foreign "
        "key is null, joined with null (the subscription travels with a null key).",
        java="pfk_null_fk_left",
    ),
    ported(
        "pfk_null_fk_inner",
        fk_join(False, store="pfk_null_fk_inner-store", extractor="null"),
        IO,
        OUT,
        NULL_FK,
        "SubscriptionSendProcessorSupplierTest.innerJoinShouldNotPropagateNewPrimaryKeyWithNullFK: an "
        "inner join drops a row whose foreign key is null, and counts it as dropped.",
        java="pfk_null_fk_inner",
    ),
    ported(
        "pfk_old_new_fk_differ",
        fk_join(True, store="pfk_old_new_fk_differ-store", extractor="returnNull"),
        IO,
        OUT,
        OLD_NEW_FK_DIFFER,
        f"{CLS}.shouldEmitRecordWhenOldAndNewFkDiffer: a left join whose foreign key becomes null "
        "unsubscribes the old one and emits the row joined with null.",
        java="pfk_old_new_fk_differ",
    ),
    *_pair(
        "churn_cached",
        CHURN,
        "SubscriptionSendProcessorSupplierTest (FK changes, deletes) and ResponseJoinProcessorSupplierTest "
        "(stale responses) over one table pair: a left key's "
        "foreign key and value changing back and forth with right updates, deletes and re-inserts in "
        "between; the result store keeps its cache.",
        caching=True,
    ),
    *_pair(
        "churn_unmaterialized",
        CHURN,
        "As churn_cached, the result not materialized: each response looks up the left table's "
        "current value and drops it when its hash is stale.",
        store=False,
    ),
    *_pair(
        "named_with_key",
        WITH_KEY,
        "KIP-1104's BiFunction extractor with TableJoined.as(name) (KTableImpl.doJoinOnForeignKey's "
        "names): every processor, "
        "store and internal topic is named after the join; the extractor reads the key too.",
        store=False,
        caching=True,
        extractor="withKey",
        name="pfk-named",
    ),
]
