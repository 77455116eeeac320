"""The exceptions kspark raises, named after Kafka Streams' own.

Every error a user can see is a subclass of :class:`StreamsException`, so one
``except`` clause catches them all; the subclasses say which kind of mistake it
was (a bad topology, a bad config, a store that cannot be read right now).
"""

from __future__ import annotations

__all__ = [
    "StreamsException",
    "TopologyException",
    "ConfigException",
    "InvalidStateStoreException",
    "UnknownStateStoreException",
    "StreamsNotStartedException",
    "ProcessorStateException",
    "SerializationException",
    "TaskMigratedException",
]


class StreamsException(Exception):
    """Base class of every kspark error."""


class TopologyException(StreamsException):
    """The topology is invalid: names the node or store that is wrong."""

    def __init__(self, message: str) -> None:
        super().__init__(f"Invalid topology: {message}")


class ConfigException(StreamsException):
    """A configuration key is unknown or its value is invalid; names the key."""


class InvalidStateStoreException(StreamsException):
    """A state store cannot be read now (app not running, closed, or migrating)."""


class UnknownStateStoreException(InvalidStateStoreException):
    """No state store of that name exists in the topology."""


class StreamsNotStartedException(InvalidStateStoreException):
    """``KafkaStreams`` was asked for its stores or metadata before ``start()`` (or
    ``process_available()``): retry once it runs. A subclass of ``InvalidStateStoreException``,
    as in Kafka Streams."""


class ProcessorStateException(StreamsException):
    """A state store's local state cannot be opened, read or written (a RocksDB store's directory
    is not writable, or another store holds its lock); names the store, the task and the path."""


class SerializationException(StreamsException):
    """A record could not be (de)serialized; names the topic and, where known, the offset."""


class TaskMigratedException(StreamsException):
    """The task moved to another instance (or was fenced) while processing."""
