"""StreamsConfig: known names, validation errors naming the key, Kafka's defaults, typed accessors."""

from __future__ import annotations

from typing import Any

import pytest

from kspark.config import StreamsConfig
from kspark.errors import ConfigException
from kspark.processor import FailOnInvalidTimestamp, WallclockTimestampExtractor
from kspark.processor.internals.exception_handlers import HandlerResponse
from kspark.serde import Serdes

BASE = {"application.id": "app", "bootstrap.servers": "localhost:9092"}


def cfg(**extra: object) -> StreamsConfig:
    return StreamsConfig({**BASE, **{k.replace("_", "."): v for k, v in extra.items()}})


def test_defaults_are_kafkas() -> None:
    c = StreamsConfig(BASE)
    assert c.application_id() == "app"
    assert c.bootstrap_servers() == ["localhost:9092"]
    assert c.processing_guarantee() == "at_least_once"
    assert c.commit_interval_ms() == 30_000
    assert c.cache_max_bytes() == 10 * 1024 * 1024
    assert c.num_stream_threads() == 1
    assert c.max_task_idle_ms() == 0
    assert c["num.standby.replicas"] == 0
    assert c.application_server() == ""
    assert c.default_key_serde() is None
    assert isinstance(c.default_timestamp_extractor(), FailOnInvalidTimestamp)
    assert c.deserialization_exception_handler()(None, None, ValueError()) is HandlerResponse.FAIL
    assert c.dead_letter_queue_topic() is None


def test_exactly_once_changes_commit_interval_default() -> None:
    c = StreamsConfig({**BASE, "processing.guarantee": "exactly_once_v2"})
    assert c.exactly_once() and c.commit_interval_ms() == 100
    c = StreamsConfig({**BASE, "processing.guarantee": "exactly_once_v2", "commit.interval.ms": 1000})
    assert c.commit_interval_ms() == 1000


def test_cache_alias() -> None:
    assert StreamsConfig({**BASE, "cache.max.bytes.buffering": 0}).cache_max_bytes() == 0
    assert StreamsConfig({**BASE, "statestore.cache.max.bytes": 5}).cache_max_bytes() == 5


def test_unknown_key_is_named_with_the_closest_known_name() -> None:
    with pytest.raises(
        ConfigException,
        match=r"Unknown configuration 'comit\.interval\.ms': did you mean 'commit\.interval\.ms'\?",
    ):
        StreamsConfig({**BASE, "comit.interval.ms": 10})
    with pytest.raises(ConfigException, match=r"Unknown configuration 'max\.poll\.records': not a Kafka"):
        StreamsConfig({**BASE, "max.poll.records": 10})  # a client setting: no close Streams name


def test_prefixes_and_spark_pass_through() -> None:
    c = StreamsConfig(
        {**BASE, "consumer.max.poll.records": 5, "producer.linger.ms": 1, "spark.sql.shuffle.partitions": "4"}
    )
    assert c.prefixed("consumer.") == {"max.poll.records": 5}
    assert c.prefixed("spark.") == {"sql.shuffle.partitions": "4"}


def test_missing_mandatory_keys() -> None:
    with pytest.raises(ConfigException, match=r"'application\.id'"):
        StreamsConfig({"bootstrap.servers": "x:1"})
    assert StreamsConfig({}, require_mandatory=False)["num.stream.threads"] == 1


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "processing.guarantee",
            "exactly_once",
            "processing.guarantee: String must be one of: at_least_once, exactly_once_v2",
        ),
        ("commit.interval.ms", -1, "commit.interval.ms: value must be at least 0"),
        ("num.stream.threads", "two", "num.stream.threads: expected an integer"),
        ("default.key.serde", "uuidz", "default.key.serde: expected a Serde instance or one of string, long"),
        (
            "default.deserialization.exception.handler",
            "ignore",
            "expected 'log_and_continue', 'log_and_fail'",
        ),
        ("default.timestamp.extractor", "Nope", "default.timestamp.extractor"),
        ("state.dir", 3, "state.dir: expected a string"),
    ],
)
def test_bad_values_name_the_key_and_what_is_allowed(key: str, value: object, message: str) -> None:
    with pytest.raises(ConfigException, match=message.replace("(", r"\(").replace(")", r"\)")):
        StreamsConfig({**BASE, key: value})


def test_serdes_by_name_or_instance() -> None:
    c = StreamsConfig({**BASE, "default.key.serde": "string", "default.value.serde": Serdes.Long()})
    assert c.default_key_serde().serializer().serialize("t", "x") == b"x"
    assert c.default_value_serde().serializer().serialize("t", 1) == b"\x00" * 7 + b"\x01"
    for name in ("string", "long", "integer", "double", "bytes", "json"):
        StreamsConfig({**BASE, "default.value.serde": name}).default_value_serde()


def test_handlers_and_extractor_by_name_or_callable() -> None:
    def handler(ctx: object, record: object, exc: BaseException) -> str:
        return "continue"

    c = StreamsConfig(
        {
            **BASE,
            "default.deserialization.exception.handler": handler,
            "processing.exception.handler": "log_and_continue",
            "default.timestamp.extractor": WallclockTimestampExtractor,
        }
    )
    assert c.deserialization_exception_handler() is handler
    assert c.processing_exception_handler()(None, None, ValueError()) is HandlerResponse.CONTINUE
    assert isinstance(c.default_timestamp_extractor(), WallclockTimestampExtractor)
    extractor = StreamsConfig(
        {**BASE, "default.timestamp.extractor": lambda r, pt: 7}
    ).default_timestamp_extractor()
    assert extractor.extract(None, -1) == 7


def test_mapping_view() -> None:
    c = StreamsConfig({**BASE, "state.dir": "/tmp/x"})
    assert c["state.dir"] == "/tmp/x"
    assert "application.id" in c and "num.stream.threads" in c
    assert c.originals() == {**BASE, "bootstrap.servers": ["localhost:9092"], "state.dir": "/tmp/x"}


def test_internal_double_underscore_settings_pass_through() -> None:
    # Kafka Streams reads e.g. the outer-join emit throttle from an internal "__...__" setting.
    key = "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__"
    cfg = StreamsConfig({"application.id": "a", "bootstrap.servers": "b:1", key: 0})
    assert cfg.originals()[key] == 0
    with pytest.raises(ConfigException, match="__typo"):
        StreamsConfig({"application.id": "a", "bootstrap.servers": "b:1", "__typo": 1})


def test_default_serdes_are_configured_with_the_application_config_as_kafka_does() -> None:
    """Kafka's StreamsConfig calls configure(originals, is_key) on its default serdes: a serde that
    reads settings (a Schema Registry serde, say) is ready without being configured by hand."""
    seen: list[tuple[dict[str, Any], bool]] = []

    class Recording(type(Serdes.String())):  # type: ignore[misc]
        def configure(self, configs: dict[str, Any], is_key: bool) -> None:
            seen.append((configs, is_key))

    config = StreamsConfig(
        {
            "application.id": "a",
            "bootstrap.servers": "k:9092",
            "default.key.serde": Recording(),
            "default.value.serde": Recording(),
        }
    )
    config.default_key_serde()
    config.default_value_serde()
    config.default_key_serde()  # configured once
    assert [(c["application.id"], is_key) for c, is_key in seen] == [("a", True), ("a", False)]
