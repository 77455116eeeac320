"""``rocksdb.config.setter``: each persistent store's database opens with the options the setter set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kspark import Consumed, Materialized, StreamsBuilder
from kspark.errors import ConfigException
from kspark.serde import Serdes
from kspark.state import RocksDBConfigSetter
from kspark.state.internals.metered import innermost
from kspark.testing import TopologyTestDriver

S = Serdes.String()
CALLS: list[tuple[Any, ...]] = []


class _SmallBuffers(RocksDBConfigSetter):
    def set_config(self, store_name: str, options: Any, configs: Any) -> None:
        CALLS.append(("set", store_name, configs["application.id"], id(self)))
        options.set_write_buffer_size(3 * 1024 * 1024)

    def close(self, store_name: str, options: Any) -> None:
        CALLS.append(("close", store_name, id(self)))


def _counts() -> Any:
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).group_by_key().count(Materialized.as_("counts"))
    b.stream("in2", Consumed.with_(S, S)).group_by_key().count(Materialized.as_("counts2"))
    return b.build()


def _options_file(store: Any) -> str:
    path = Path(innermost(store).path)
    [options] = sorted(path.glob("OPTIONS-*"))[-1:]
    return options.read_text()


def test_a_setter_class_tunes_each_store_with_an_instance_of_its_own_and_is_closed() -> None:
    CALLS.clear()
    config = {"application.id": "tuned", "rocksdb.config.setter": _SmallBuffers}
    with TopologyTestDriver(_counts(), config) as driver:
        driver.create_input_topic("in", S.serializer(), S.serializer()).pipe_input("a", "x")
        assert "write_buffer_size=3145728" in _options_file(driver.get_state_store("counts"))
        sets = [c for c in CALLS if c[0] == "set"]
        assert sorted(c[1] for c in sets) == ["counts", "counts2"]
        assert {c[2] for c in sets} == {"tuned"}
        assert len({c[3] for c in sets}) == 2  # one setter per database, as Kafka makes one per store
    closes = [c for c in CALLS if c[0] == "close"]
    assert sorted(c[1] for c in closes) == ["counts", "counts2"]


def test_a_function_is_a_setter_and_a_bad_value_is_named() -> None:
    seen: list[str] = []

    def tune(store_name: str, options: Any, configs: Any) -> None:
        seen.append(store_name)
        options.set_write_buffer_size(5 * 1024 * 1024)

    with TopologyTestDriver(_counts(), {"rocksdb.config.setter": tune}) as driver:
        assert "write_buffer_size=5242880" in _options_file(driver.get_state_store("counts2"))
    assert sorted(seen) == ["counts", "counts2"]
    with pytest.raises(ConfigException, match=r"rocksdb\.config\.setter"):
        TopologyTestDriver(_counts(), {"rocksdb.config.setter": "com.example.MySetter"})
    with pytest.raises(ConfigException, match=r"subclass kspark\.state\.RocksDBConfigSetter"):
        TopologyTestDriver(_counts(), {"rocksdb.config.setter": dict})


def test_a_failing_setter_fails_the_store_naming_it() -> None:
    def broken(store_name: str, options: Any, configs: Any) -> None:
        raise RuntimeError("no such option")

    from kspark.errors import StreamsException

    with pytest.raises(StreamsException, match=r"rocksdb\.config\.setter .*store counts.*no such option"):
        TopologyTestDriver(_counts(), {"rocksdb.config.setter": broken})
