"""Versioned key-value stores (KIP-889): several timestamped versions per key, read "as of" a time.

Mirrors Kafka Streams' ``VersionedKeyValueStore`` and ``VersionedRecord``.
A put carries the record's timestamp; the version it makes is valid from that
timestamp until the next version of the key (its ``valid_to``). The store's
*history retention* is also its grace period: a put or delete older than the
store's observed stream time minus the retention is not applied
(``PUT_RETURN_CODE_NOT_PUT``), and ``get(key, as_of)`` older than that
returns only the latest version, if it qualifies. ``Stores`` makes them
(``persistent_versioned_key_value_store``, ``versioned_key_value_store_builder``);
the implementation is in :mod:`kspark.state.internals.versioned`.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kspark.state.api import StateStore

__all__ = [
    "VersionedRecord",
    "VersionedKeyValueStore",
    "PUT_RETURN_CODE_VALID_TO_UNDEFINED",
    "PUT_RETURN_CODE_NOT_PUT",
]

V = TypeVar("V")

PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1
"""``put`` made the latest version of its key: its validity has no end yet."""

PUT_RETURN_CODE_NOT_PUT = -(2**63)
"""``put`` was not applied: its timestamp is older than the store's grace period (Java's Long.MIN_VALUE)."""


@dataclass(frozen=True)
class VersionedRecord(Generic[V]):
    """A value with the timestamp it is valid from and, when known, the one it is valid to (exclusive).

    As in Kafka, ``valid_to`` is ``None`` for the latest version of a key and
    for every record a typed store returns (Kafka's ``MeteredVersionedKeyValueStore``
    keeps only value and timestamp).
    """

    value: V
    timestamp: int
    valid_to: int | None = None

    def __post_init__(self) -> None:
        if self.value is None:
            raise ValueError("value cannot be null.")


class VersionedKeyValueStore(StateStore, Generic[V]):
    """A key-value store keeping the versions of each key within its history retention."""

    PUT_RETURN_CODE_VALID_TO_UNDEFINED = PUT_RETURN_CODE_VALID_TO_UNDEFINED
    PUT_RETURN_CODE_NOT_PUT = PUT_RETURN_CODE_NOT_PUT

    @abstractmethod
    def put(self, key: Any, value: V | None, timestamp: int) -> int:
        """Add the version ``value`` of ``key`` valid from ``timestamp`` (``None``: a delete).

        Returns the new version's ``valid_to``, ``PUT_RETURN_CODE_VALID_TO_UNDEFINED``
        when it is the latest version, or ``PUT_RETURN_CODE_NOT_PUT`` when
        ``timestamp`` is older than the grace period."""

    @abstractmethod
    def delete(self, key: Any, timestamp: int) -> VersionedRecord[V] | None:
        """Delete ``key`` as of ``timestamp``; returns the version valid then (``None`` if none, or if
        the delete is older than the grace period and was not applied)."""

    @abstractmethod
    def get(self, key: Any, as_of_timestamp: int | None = None) -> VersionedRecord[V] | None:
        """The latest version of ``key`` (``as_of_timestamp`` omitted), or the version valid at
        ``as_of_timestamp`` (inclusive): the one with the largest timestamp not after it."""
