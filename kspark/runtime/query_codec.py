"""The HTTP endpoint's encodings: keys from URL text, answers to JSON, positions and page cursors.

What :mod:`kspark.runtime.query_server` needs to turn a request into a store
read and a read into a body, apart from the server itself (fast tests cover
these without one).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import uuid
from collections.abc import Mapping
from typing import Any

import orjson

from kspark.errors import SerializationException
from kspark.kstream.windowed import Windowed
from kspark.query import Position, PositionBound
from kspark.serde.primitives import (
    BooleanDeserializer,
    DoubleDeserializer,
    FloatDeserializer,
    IntegerDeserializer,
    JsonDeserializer,
    LongDeserializer,
    ShortDeserializer,
    StringDeserializer,
    UUIDDeserializer,
)
from kspark.state.api import ValueAndTimestamp

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_TIMEOUT_MS",
    "MAX_PAGE_SIZE",
    "MAX_TIMEOUT_MS",
    "QueryError",
    "decode_cursor",
    "encode_cursor",
    "key_from_text",
    "parse_position",
    "to_json",
]

DEFAULT_TIMEOUT_MS = 10_000
MAX_TIMEOUT_MS = 300_000
DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 10_000
_INTEGER = re.compile(r"[+-]?[0-9]+")


class QueryError(Exception):
    """A request the endpoint answers with ``status`` and ``{"error": message, **extra}``."""

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


# ---------------------------------------------------------------- JSON and text conversions
def _json_default(obj: Any) -> Any:
    # orjson calls this for what it cannot encode itself (dataclasses are passed through to it,
    # so that Windowed and ValueAndTimestamp get their documented shapes)
    if isinstance(obj, Windowed):
        return {"key": obj.key, "start": obj.window.start, "end": obj.window.end}
    if isinstance(obj, ValueAndTimestamp):
        return {"value": obj.value, "timestamp": obj.timestamp}
    if isinstance(obj, Position):
        return obj.to_map()
    if isinstance(obj, (set, frozenset)):
        return list(obj)
    return str(obj)


_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_SERIALIZE_NUMPY


def to_json(body: Any) -> bytes:
    """``body`` as JSON bytes: windowed keys ``{"key", "start", "end"}``, ``ValueAndTimestamp``
    ``{"value", "timestamp"}``, positions as maps, anything else JSON cannot hold as ``str()``."""
    try:
        return orjson.dumps(body, default=_json_default, option=_OPTIONS)
    except orjson.JSONEncodeError:
        # orjson refuses integers past 64 bits and very deep nesting; the json module takes
        # the first once everything else is made plain
        return json.dumps(_plain(body, 0), allow_nan=False, separators=(",", ":")).encode()


def _plain(obj: Any, depth: int) -> Any:
    """``obj`` as JSON-safe Python (the slow path of :func:`to_json`)."""
    if depth > 200:
        return str(obj)
    if obj is None or isinstance(obj, (str, bool, int)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {
            k if isinstance(k, str) else str(_plain(k, depth + 1)): _plain(v, depth + 1)
            for k, v in obj.items()
        }
    if isinstance(obj, (list, tuple)):
        return [_plain(v, depth + 1) for v in obj]
    converted = _json_default(obj)
    if isinstance(converted, str):
        return converted
    return _plain(converted, depth + 1)


def key_from_text(text: str, key_serde: Any, store: str) -> Any:
    """The key ``text`` (from a URL) in the type of ``store``'s key serde; QueryError 400 when the
    serde is not one whose keys have a text form, or the text is not such a key."""
    deserializer = key_serde.deserializer() if key_serde is not None else None
    try:
        key: Any
        if isinstance(deserializer, StringDeserializer):
            key = text
        elif isinstance(deserializer, (LongDeserializer, IntegerDeserializer, ShortDeserializer)):
            if not _INTEGER.fullmatch(text):
                raise ValueError("not an integer")
            key = int(text)
        elif isinstance(deserializer, (DoubleDeserializer, FloatDeserializer)):
            if "_" in text:  # float() takes digit separators; a key in a URL should not
                raise ValueError("not a number")
            key = float(text)
        elif isinstance(deserializer, BooleanDeserializer):
            if text not in ("true", "false"):
                raise ValueError("not true or false")
            key = text == "true"
        elif isinstance(deserializer, UUIDDeserializer):
            key = uuid.UUID(text)
        elif isinstance(deserializer, JsonDeserializer):
            key = orjson.loads(text)
        else:
            raise QueryError(
                400,
                f"store {store} has keys of {key_serde!r}, which have no text form: the HTTP endpoint "
                "reads keys of the String, Long, Integer, Short, Double, Float, Boolean, UUID and JSON "
                "serdes; query this store from Python (KafkaStreams.store)",
            )
    except (ValueError, orjson.JSONDecodeError) as e:
        raise QueryError(
            400, f"{text!r} is not a key of store {store} (its key serde is {key_serde!r}): {e}"
        ) from e
    try:
        # Out-of-range numbers fail here, as a bad request, not later inside the read.
        key_serde.serializer().serialize(None, key)
    except SerializationException as e:
        raise QueryError(400, f"{text!r} is not a key of store {store}: {e}") from e
    return key


def parse_position(text: str | None) -> PositionBound:
    """``?position=`` (JSON ``{topic: {partition: offset}}``) as a bound; none: unbounded."""
    if text is None or text == "":
        return PositionBound.unbounded()
    try:
        raw = orjson.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        offsets: dict[str, dict[int, int]] = {}
        for topic, parts in raw.items():
            if not isinstance(parts, dict):
                raise ValueError(f"the partitions of {topic!r} are not a JSON object")
            mapped: dict[int, int] = {}
            for partition, offset in parts.items():
                if not isinstance(offset, int) or isinstance(offset, bool):
                    raise ValueError(f"the offset of {topic!r} partition {partition!r} is not an integer")
                mapped[int(partition)] = offset
            offsets[str(topic)] = mapped
    except (ValueError, orjson.JSONDecodeError) as e:
        raise QueryError(
            400, f'position must be JSON {{"topic": {{"partition": offset}}}}, got {text!r}: {e}'
        ) from e
    return PositionBound.at(Position.from_map(offsets))


def encode_cursor(partition: int, raw_key: bytes) -> str:
    """An opaque page cursor: the task (partition) and the bytes of the last key returned."""
    return f"{partition}.{base64.urlsafe_b64encode(raw_key).decode().rstrip('=')}"


def decode_cursor(cursor: str) -> tuple[int, bytes]:
    partition, sep, data = cursor.partition(".")
    try:
        if not sep or not partition.isdigit():
            raise ValueError("no partition")
        return int(partition), base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
    except (ValueError, binascii.Error) as e:
        raise QueryError(400, f"after={cursor!r} is not a cursor this endpoint returned (its 'next')") from e


# ---------------------------------------------------------------- the queries, without HTTP
