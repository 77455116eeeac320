"""What every in-memory bytes store shares: its name, the persistent flag, and open/closed state.

The key-value, window and session stores differ in how they lay out their
data; they open, close and refuse use while closed the same way, as Kafka's
in-memory stores do.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING

from kspark.errors import InvalidStateStoreException
from kspark.state.api import StateStore

if TYPE_CHECKING:
    from kspark.processor.api import ProcessorContext

__all__ = ["InMemoryStore"]


class InMemoryStore(StateStore):
    """Base of the in-memory stores: ``close`` drops the contents (``_clear``) and closes."""

    def __init__(self, name: str, *, persistent: bool) -> None:
        self._name = name
        self._persistent = persistent
        self._open = False
        self._context: ProcessorContext | None = None

    @property
    def name(self) -> str:
        return self._name

    def init(self, context: ProcessorContext, root: StateStore) -> None:
        self._context = context
        self._open = True

    def close(self) -> None:
        self._clear()
        self._open = False

    def persistent(self) -> bool:
        return self._persistent

    def is_open(self) -> bool:
        return self._open

    def _check_open(self) -> None:
        if not self._open:
            raise InvalidStateStoreException(f"Store {self._name} is currently closed.")

    @abstractmethod
    def _clear(self) -> None:
        """Drop every entry (the store is being closed)."""
