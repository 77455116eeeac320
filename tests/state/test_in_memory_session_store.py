"""Session stores against a brute-force model of Kafka's InMemorySessionStore."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kspark.key_value import KeyValue
from kspark.kstream.windowed import SessionWindow, Window, Windowed
from kspark.serde import Serdes
from kspark.state import Stores

from .conftest import FakeContext

RETENTION = 60


def session_store(ctx: FakeContext | None = None) -> Any:
    store = Stores.session_store_builder(
        Stores.in_memory_session_store("s", RETENTION), Serdes.String(), Serdes.Long()
    ).build()
    store.init(ctx or FakeContext(), store)
    return store


def sk(key: str, start: int, end: int) -> Windowed[str]:
    return Windowed(key, SessionWindow(start, end))


sessions = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "ab"]),
        st.integers(0, 150),
        st.integers(0, 30),
        st.none() | st.integers(0, 9),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(sessions, st.sampled_from(["a", "b", "ab"]), st.integers(0, 200), st.integers(0, 200))
def test_find_sessions_matches_model(
    puts: list[tuple[str, int, int, int | None]], key: str, earliest_end: int, latest_start: int
) -> None:
    store = session_store()
    observed = -1
    model: dict[tuple[str, int, int], int] = {}
    for k, start, length, value in puts:
        end = start + length
        store.put(sk(k, start, end), value)
        observed = max(observed, end)
        if end <= observed - RETENTION:
            continue
        if value is None:
            model.pop((k, start, end), None)
        else:
            model[(k, start, end)] = value
    min_live = max(0, observed - RETENTION + 1)
    live = sorted(
        ((k, s, e, v) for (k, s, e), v in model.items() if e >= min_live),
        key=lambda r: (r[2], r[0].encode(), -r[1]),  # end, key bytes, start descending
    )
    expected = [
        KeyValue(sk(k, s, e), v)
        for k, s, e, v in live
        if k == key and e >= earliest_end and s <= latest_start
    ]
    assert list(store.find_sessions(key, earliest_end, latest_start)) == expected
    assert list(store.backward_find_sessions(key, earliest_end, latest_start)) == expected[::-1]
    assert list(store.fetch(key)) == [KeyValue(sk(k, s, e), v) for k, s, e, v in live if k == key]
    by_end = [KeyValue(sk(k, s, e), v) for k, s, e, v in live if earliest_end <= e <= latest_start]
    assert list(store.find_sessions_by_end_time(earliest_end, latest_start)) == by_end
    for k, s, e, v in live:
        assert store.fetch_session(k, s, e) == v


def test_remove_and_put_none() -> None:
    store = session_store()
    store.put(sk("a", 0, 10), 1)
    store.put(sk("a", 20, 30), 2)
    store.remove(sk("a", 0, 10))
    store.put(sk("a", 20, 30), None)
    assert list(store.fetch("a")) == []
    store.remove(sk("zz", 0, 1))  # absent: no error


def test_retention_drops_expired_sessions() -> None:
    ctx = FakeContext()
    store = session_store(ctx)
    store.put(sk("a", 0, 10), 1)
    store.put(sk("a", 100, 100), 2)  # observed end 100: ends < 41 purged
    assert list(store.fetch("a")) == [KeyValue(sk("a", 100, 100), 2)]
    store.put(sk("a", 30, 40), 3)  # 40 <= 100 - 60: dropped
    assert ctx.dropped == ["expired session store segment"]
    assert store.fetch_session("a", 30, 40) is None


def test_windows_are_session_windows() -> None:
    store = session_store()
    store.put(sk("a", 5, 5), 1)
    (kv,) = list(store.fetch("a"))
    assert isinstance(kv.key.window, SessionWindow)
    assert kv.key == Windowed("a", Window(5, 5))


def test_changelog_key_is_key_end_start() -> None:
    ctx = FakeContext()
    ctx.time = 42
    store = session_store(ctx)
    store.put(sk("a", 1, 2), 7)
    store.remove(sk("a", 1, 2))
    key = b"a" + (2).to_bytes(8, "big") + (1).to_bytes(8, "big")
    assert ctx.logged == [("s", key, (7).to_bytes(8, "big"), 42), ("s", key, None, 42)]
