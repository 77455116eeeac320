"""kspark's transformWithStateInPandas input grouping gives the worker what PySpark's own gives it."""

from __future__ import annotations

import io
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
serializers = pytest.importorskip("pyspark.sql.pandas.serializers")

from kspark.runtime.spark import tws_input  # noqa: E402


def _stream(batches: list[Any]) -> io.BytesIO:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, batches[0].schema) as writer:
        for b in batches:
            writer.write_batch(b)
    sink.seek(0)
    return sink


def _serializer(max_records: int) -> Any:
    s = serializers.TransformWithStateInPandasSerializer(
        timezone="UTC",
        safecheck=True,
        assign_cols_by_name=True,
        prefer_int_ext_dtype=False,
        arrow_max_records_per_batch=max_records,
        arrow_max_bytes_per_batch=2**31 - 1,
        int_to_decimal_coercion_enabled=False,
    )
    s.key_offsets = [0]
    return s


def _groups(load: Any, batches: list[Any], max_records: int) -> list[tuple[Any, Any, list[dict[str, Any]]]]:
    """(mode, key, rows of the key's frames, in order) for everything load_stream yields."""
    out = []
    for mode, key, frames in load(_serializer(max_records), _stream(batches)):
        rows = [] if frames is None else [r for _, f in frames for r in f.to_dict("records")]
        out.append((mode, key, rows))
    return out


def _batch(keys: list[Any], offset: int) -> Any:
    n = len(keys)
    return pa.RecordBatch.from_pydict(
        {
            "task": keys,
            "key": [f"k{offset + i}".encode() if i % 4 else None for i in range(n)],
            "offset": list(range(offset, offset + n)),
            "headers": [[{"key": "h", "value": b"v"}] if i % 3 == 0 else [] for i in range(n)],
        },
        schema=pa.schema(
            [
                ("task", pa.int32()),
                ("key", pa.binary()),
                ("offset", pa.int64()),
                ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
            ]
        ),
    )


def _same(a: list[Any], b: list[Any]) -> None:
    assert [(m, k) for m, k, _ in a] == [(m, k) for m, k, _ in b]
    for (_, _, rows_a), (_, _, rows_b) in zip(a, b, strict=True):
        assert [{k: (list(v) if k == "headers" else v) for k, v in r.items()} for r in rows_a] == [
            {k: (list(v) if k == "headers" else v) for k, v in r.items()} for r in rows_b
        ]


@pytest.mark.parametrize("max_records", [3, 10_000])
def test_runs_of_keys_across_batches_give_the_same_groups_and_rows(max_records: int) -> None:
    # a key's run continues into the next Arrow batch; keys come back later; one batch is empty
    batches = [_batch([5, 5, 5, 7], 0), _batch([7, 7, 9], 4), _batch([], 7), _batch([9, 5, 5, 5, 5], 7)]
    original = serializers.TransformWithStateInPandasSerializer.load_stream
    _same(_groups(tws_input._load_stream, batches, max_records), _groups(original, batches, max_records))


def test_keys_of_other_types_take_pysparks_own_path() -> None:
    batches = [
        pa.RecordBatch.from_pydict({"g": ["a", "a", "b"], "v": [1, 2, 3]}),
        pa.RecordBatch.from_pydict({"g": ["b", "c", None], "v": [4, 5, 6]}),
    ]
    original = serializers.TransformWithStateInPandasSerializer.load_stream
    got, want = _groups(tws_input._load_stream, batches, 2), _groups(original, batches, 2)
    assert [(m, k) for m, k, _ in got] == [(m, k) for m, k, _ in want]
    assert [rows for _, _, rows in got] == [rows for _, _, rows in want]


def test_key_runs() -> None:
    import numpy as np

    assert tws_input.key_runs([np.array([1, 1, 2, 2, 2, 1])]) == [(0, 2), (2, 5), (5, 6)]
    assert tws_input.key_runs([np.array([1, 1, 1]), np.array([0, 1, 1])]) == [(0, 1), (1, 3)]
    assert tws_input.key_runs([np.array([], dtype=np.int64)]) == []


def test_installs_only_over_the_pyspark_it_was_written_for(monkeypatch: Any) -> None:
    import pyspark

    monkeypatch.setattr(tws_input, "_original", None)
    original = serializers.TransformWithStateInPandasSerializer.load_stream
    monkeypatch.setattr(serializers.TransformWithStateInPandasSerializer, "load_stream", original)
    monkeypatch.setattr(pyspark, "__version__", "9.9.9")
    assert not tws_input.install() and not tws_input.installed()
    assert serializers.TransformWithStateInPandasSerializer.load_stream is original
    monkeypatch.setattr(pyspark, "__version__", tws_input.PYSPARK_VERSION)
    assert tws_input.install() and tws_input.installed()
    assert serializers.TransformWithStateInPandasSerializer.load_stream is tws_input._load_stream
