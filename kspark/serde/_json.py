"""The codec behind kspark's JSON serde: orjson's speed, the standard library's results.

A JSON value of a benchmark record (60 bytes, four fields) took 1.7 µs to
decode and 1.7 µs to encode with the ``json`` module, 0.3 and 0.1 µs with
orjson (``python -m bench.json_codec``); in a stateless filter-and-map that
was most of kspark's own work per record. But orjson differs from ``json``
on some values, and the serde must not change what a value becomes:

* encoding: orjson writes NaN and Infinity as ``null`` (``json`` with
  ``allow_nan=False`` refuses them), refuses what ``json`` accepts (non-str
  dict keys, integers beyond 64 bits, subclasses of str/int/float/dict/list,
  nesting deeper than 254) and accepts some of what ``json`` refuses
  (datetimes and dataclasses unless told not to, Enum members, UUIDs);
* decoding: orjson turns an integer outside [-2**63, 2**64) into a float
  (``json`` keeps every digit) and refuses what ``json`` accepts (``NaN``,
  ``Infinity``, numbers that overflow to infinity, escaped lone surrogates,
  nesting deeper than 1024).

So each function takes orjson's result only where it is ``json``'s value:
an encoding that contains ``null`` is checked for non-finite floats, a text
with a run of 19 or more digits is decoded by ``json``, and anything orjson
refuses goes to ``json``, which accepts it or raises as it always did. What
remains different is the spelling of some floats (orjson writes ``1e-7``
where ``json`` writes ``1e-07``; both read back as the same float) and that
Enum members (as their values) and UUIDs (as strings) encode.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

__all__ = ["encode", "decode"]

_STDLIB_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
# Types orjson would encode but json refuses go to json, which refuses them as before.
_ORJSON_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
)
# Digits to b"0", everything else to a space: a run of 19 zeros is a run of 19 digits.
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_DIGIT_RUN = b"0" * 19  # -2**63 - 1 has 19 digits; orjson reads it as a float


def encode(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON; raises ``TypeError``/``ValueError`` as ``json`` does."""
    try:
        out = orjson.dumps(value, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return _STDLIB_ENCODER.encode(value).encode("utf-8")
    # bytes.find: the `in` operator costs twice as much here (0.18 against 0.09 µs).
    if out.find(b"null") >= 0 and _has_non_finite(value):
        raise ValueError("Out of range float values are not JSON compliant (NaN or Infinity)")
    # orjson's bytes keep the ~4 KB buffer it wrote into (3.12+): 200,000 outputs held 785 MB, a
    # join on 1M records 6 GB. Joining with b"" copies into an exact-size object (~0.03 µs here).
    return b"".join((out, b""))


def decode(raw: bytes) -> Any:
    """The value of JSON text ``raw``; raises ``ValueError`` (``UnicodeDecodeError`` included) as
    ``json.loads`` does."""
    if raw.translate(_DIGITS).find(_LONG_DIGIT_RUN) < 0:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # json accepts more, and words its errors as kspark always has
    return json.loads(raw.decode("utf-8"))


def _has_non_finite(value: Any) -> bool:
    """Whether a value orjson encoded (str keys, at most 254 levels deep) holds NaN or ±Infinity."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_non_finite(v) for v in value)
    return False
