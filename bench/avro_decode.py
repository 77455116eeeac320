"""Avro decode (and encode) rates of the Schema Registry serdes, in one Python process.

    python -m bench.avro_decode [--records 200000] [--registry URL]

Encodes ``--records`` page-view records (a 4-field record schema: two short
strings, a long, an int; 20-30 bytes each in the Confluent wire format) and
decodes them four ways, printing records/s (best of 5 rounds, wall clock):

* confluent-kafka's ``AvroDeserializer`` called per record (what a plain
  confluent-kafka consumer does);
* :class:`kspark.serde.schema_registry.GenericAvroSerde`'s ``deserialize`` per
  record, as the Spark runner's fused chains call it (fastavro with the schema
  cached by id after the id's first record);
* its ``deserialize_batch`` over the whole list;
* fastavro's ``schemaless_reader`` alone with a parsed schema: the ceiling.

Encoding is timed likewise (confluent-kafka's ``AvroSerializer`` against the
serde). The registry is confluent-kafka's ``mock://`` one unless ``--registry``
names a real one: after each schema id's first record no request is sent, so
the rates do not depend on it.
"""

from __future__ import annotations

import argparse
import io
import json
import time
from collections.abc import Callable
from typing import Any

__all__ = ["main", "SCHEMA"]

SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "PageView",
        "namespace": "io.kspark.bench",
        "fields": [
            {"name": "user", "type": "string"},
            {"name": "page", "type": "string"},
            {"name": "ts", "type": "long"},
            {"name": "millis", "type": "int"},
        ],
    }
)


def _best(fn: Callable[[], Any], n: int, rounds: int = 5) -> float:
    """Best records/s of ``fn`` (which handles ``n`` records) over ``rounds`` runs."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return n / best


def main(argv: list[str] | None = None) -> None:
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from fastavro import parse_schema, schemaless_reader

    from kspark.serde.schema_registry import GenericAvroSerde, registry_settings, schema_registry_client

    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--registry", default="mock://bench-avro-decode", help="schema.registry.url")
    args = ap.parse_args(argv)
    n, topic = args.records, "page-views"
    config = {"schema.registry.url": args.registry}

    records = [
        {
            "user": f"user-{i % 1000}",
            "page": f"/page/{i % 50}",
            "ts": 1_700_000_000_000 + i,
            "millis": i % 5000,
        }
        for i in range(n)
    ]
    serde = GenericAvroSerde(config, schema=SCHEMA)
    client = schema_registry_client(registry_settings(config, False))
    ctx = SerializationContext(topic, MessageField.VALUE)
    theirs_ser = AvroSerializer(client, SCHEMA, conf={"subject.name.strategy.type": "TOPIC"})
    theirs_de = AvroDeserializer(client, conf={"subject.name.strategy.type": "TOPIC"})
    ser, de = serde.serializer(), serde.deserializer()

    data = [ser.serialize(topic, r) or b"" for r in records]
    assert data == [theirs_ser(r, ctx) for r in records]
    assert de.deserialize_batch(topic, data) == records == [theirs_de(d, ctx) for d in data]
    parsed = parse_schema(json.loads(SCHEMA), named_schemas={})
    size = sum(len(d) for d in data if d) / n

    def ceiling() -> None:
        for d in data:
            stream = io.BytesIO(d)
            stream.seek(5)
            schemaless_reader(stream, parsed, None)

    print(f"{n:,} records of {size:.1f} bytes (Confluent wire format), records/s, best of 5")
    print("| operation | records/s |")
    print("| --- | ---: |")
    rows: list[tuple[str, Callable[[], Any]]] = [
        ("decode: confluent-kafka AvroDeserializer, per record", lambda: [theirs_de(d, ctx) for d in data]),
        (
            "decode: GenericAvroSerde.deserialize, per record",
            lambda: [de.deserialize(topic, d) for d in data],
        ),
        ("decode: GenericAvroSerde.deserialize_batch", lambda: de.deserialize_batch(topic, data)),
        ("decode: fastavro schemaless_reader alone (ceiling)", ceiling),
        ("encode: confluent-kafka AvroSerializer, per record", lambda: [theirs_ser(r, ctx) for r in records]),
        (
            "encode: GenericAvroSerde.serialize, per record",
            lambda: [ser.serialize(topic, r) for r in records],
        ),
    ]
    for name, fn in rows:
        print(f"| {name} | {_best(fn, n):,.0f} |", flush=True)


if __name__ == "__main__":
    main()
