"""``ProcessorContext.app_configs`` / ``app_configs_with_prefix`` (Kafka's ``appConfigs`` and
``appConfigsWithPrefix``), as a processor sees them in the TopologyTestDriver."""

from __future__ import annotations

from typing import Any

from kspark import Topology
from kspark.processor import Processor, ProcessorContext, Record
from kspark.serde import Serdes
from kspark.testing import TopologyTestDriver

S = Serdes.String()


class _Configs(Processor[str, str]):
    seen: dict[str, Any] = {}  # noqa: RUF012 - written once per test

    def init(self, context: ProcessorContext) -> None:
        _Configs.seen = {
            "all": context.app_configs(),
            "prefixed": context.app_configs_with_prefix("consumer."),
        }

    def process(self, record: Record[str, str]) -> None:
        pass


def test_a_processor_reads_the_application_settings_and_a_prefix_of_them() -> None:
    topo = Topology()
    topo.add_source("src", "in", key_deserializer=S.deserializer(), value_deserializer=S.deserializer())
    topo.add_processor("p", _Configs, "src")
    config = {"application.id": "cfg", "bootstrap.servers": "x:1", "consumer.max.poll.records": "7"}
    with TopologyTestDriver(topo, config) as d:
        d.create_input_topic("in", S, S).pipe_input("k", "v")
    assert _Configs.seen["all"]["application.id"] == "cfg"
    assert _Configs.seen["all"]["consumer.max.poll.records"] == "7"
    assert _Configs.seen["prefixed"] == {"max.poll.records": "7"}
