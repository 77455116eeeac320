"""The JSON serde's codec gives the standard library's values, whichever library does the work."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kspark.errors import SerializationException
from kspark.serde import Serdes, _json

_STDLIB = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)

scalars = (
    st.none()
    | st.booleans()
    | st.integers()  # unbounded: beyond 64 bits too
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats()  # NaN and ±Infinity included
    | st.text()
    | st.text(alphabet=st.characters(categories=["Cs", "Cc", "Lo"]))  # lone surrogates, controls
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
        | st.dictionaries(st.integers(-5, 5) | st.booleans() | st.none(), inner, max_size=3)
    ),
    max_leaves=12,
)


def same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (1 and 1.0 differ, so do 0.0 and -0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def stdlib_encode(value: Any) -> bytes | type[Exception]:
    try:
        return _STDLIB.encode(value).encode("utf-8")
    except (TypeError, ValueError) as e:
        return type(e)


def codec_encode(value: Any) -> bytes | type[Exception]:
    try:
        return _json.encode(value)
    except (TypeError, ValueError) as e:
        return type(e)


def has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(has_float(v) for v in value)
    return False


@settings(max_examples=2000)
@given(values)
def test_encoding_refuses_what_json_refuses_and_reads_back_as_json_s(value: Any) -> None:
    want, got = stdlib_encode(value), codec_encode(value)
    if not isinstance(want, bytes):
        assert got is want  # the same kind of error: NaN/Infinity a ValueError, surrogates too
        return
    assert isinstance(got, bytes)
    assert same(json.loads(got), json.loads(want))
    if not has_float(value):  # floats may be spelled differently (1e-7 and 1e-07)
        assert got == want


def texts_of(value: Any) -> st.SearchStrategy[bytes]:
    return st.sampled_from([",", ", ", " ,\n"]).map(
        lambda sep: json.dumps(value, separators=(sep, ":"), allow_nan=True, ensure_ascii=False).encode(
            "utf-8", "surrogatepass"
        )
    )


raw_texts = (
    values.flatmap(texts_of)
    | values.map(lambda v: json.dumps(v, allow_nan=True).encode())  # \\ud800 escapes, NaN, Infinity
    | st.binary(max_size=30)
    | st.from_regex(rb"\A-?[0-9]{1,25}(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?\Z")
)


def stdlib_decode(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError as e:
        return type(e)


def codec_decode(raw: bytes) -> Any:
    try:
        return _json.decode(raw)
    except ValueError as e:
        return type(e)


@settings(max_examples=3000)
@given(raw_texts)
def test_decoding_gives_json_s_value_or_error(raw: bytes) -> None:
    want, got = stdlib_decode(raw), codec_decode(raw)
    if isinstance(want, type):
        assert got is want
    else:
        assert same(got, want)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (b"-9223372036854775809", -(2**63) - 1),  # orjson alone: a float
        (b"99999999999999999999", 10**20 - 1),
        (b'{"id":123456789012345678901234567890}', {"id": 123456789012345678901234567890}),
        (b"18446744073709551615", 2**64 - 1),
        (b"1e400", math.inf),  # orjson alone refuses these
        (b"[NaN,-Infinity]", [math.nan, -math.inf]),
        (b'"\\ud800"', "\ud800"),
    ],
)
def test_values_only_json_decodes_exactly(text: bytes, value: Any) -> None:
    assert same(Serdes.JSON().deserializer().deserialize("t", text), value)


@pytest.mark.parametrize(
    "value",
    [
        math.nan,
        {"a": [1, {"b": math.inf}]},
        [None, -math.inf],
        {"k": "null", "v": math.nan},
        {1: math.nan},  # non-str keys: json's path
    ],
)
def test_non_finite_floats_are_refused_wherever_they_are(value: Any) -> None:
    with pytest.raises(SerializationException, match="JsonSerializer cannot serialize"):
        Serdes.JSON().serializer().serialize("t", value)


def test_values_only_json_encodes() -> None:
    ser = Serdes.JSON().serializer()
    assert (
        ser.serialize("t", {2: "a", None: 2, True: [2**70]})
        == b'{"2":"a","null":2,"true":[1180591620717411303424]}'
    )
    assert ser.serialize("t", {"a": None}) == b'{"a":null}'


@dataclasses.dataclass
class _Point:
    x: int


@pytest.mark.parametrize(
    "value", [datetime.datetime(2026, 1, 1), {"d": datetime.date(2026, 1, 1)}, [_Point(1)], {"a", "b"}]
)
def test_what_json_refuses_is_refused(value: Any) -> None:
    """orjson alone would write datetimes and dataclasses."""
    with pytest.raises(SerializationException, match="JsonSerializer cannot serialize"):
        Serdes.JSON().serializer().serialize("t", value)


class _Name(str):
    pass


def test_subclasses_encode_as_json_encodes_them() -> None:
    value = {"n": _Name("x"), "i": enum.IntEnum("I", "A")(1), "f": _Float(0.5)}
    assert (
        Serdes.JSON().serializer().serialize("t", value) == stdlib_encode(value) == b'{"n":"x","i":1,"f":0.5}'
    )


class _Float(float):
    pass


def test_what_encodes_beyond_json() -> None:
    """Documented in _json.py: UUIDs encode as strings (json refuses them)."""
    u = uuid.UUID("123e4567-e89b-12d3-a456-426614174000")
    assert Serdes.JSON().serializer().serialize("t", {"u": u}) == b'{"u":"%s"}' % str(u).encode()


def test_too_deep_is_a_serialization_error() -> None:
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(SerializationException, match="JsonSerializer"):
        Serdes.JSON().serializer().serialize("t", deep)
    with pytest.raises(SerializationException, match="JsonDeserializer"):
        Serdes.JSON().deserializer().deserialize("t", b"[" * 100_000 + b"]" * 100_000)


def test_encoded_values_hold_only_their_own_bytes() -> None:
    """orjson writes into a ~4 KB buffer and keeps it in the bytes it returns; outputs held by a
    task (a join's batch, say) must not cost that much each."""
    import tracemalloc

    tracemalloc.start()
    try:
        held = [_json.encode({"id": i, "tier": "pro"}) for i in range(2_000)]
        size, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(held) == 2_000
    assert size < 2_000 * 200  # ~60 bytes each and the list, not 4 KB each
