"""Testing utilities: ``TopologyTestDriver`` (the reference interpreter) and its test topics."""

from kspark.testing.driver import MetricName, TopologyTestDriver
from kspark.testing.test_record import TestRecord
from kspark.testing.test_topics import NoSuchElementException, TestInputTopic, TestOutputTopic

__all__ = [
    "TopologyTestDriver",
    "TestInputTopic",
    "TestOutputTopic",
    "TestRecord",
    "NoSuchElementException",
    "MetricName",
]
