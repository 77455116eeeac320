"""A minimal task context for store tests (the engine's real one is tested elsewhere)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from kspark.processor.api import (
    Cancellable,
    Headers,
    ProcessorContext,
    PunctuationType,
    Record,
    RecordMetadata,
)
from kspark.serde import Serdes
from kspark.state.api import StateStore


class FakeContext(ProcessorContext):
    """Implements what stores use: ids, default serdes, timestamp, log_change, register, record_dropped."""

    def __init__(self, key_serde: Any = None, value_serde: Any = None) -> None:
        self._key_serde = key_serde if key_serde is not None else Serdes.String()
        self._value_serde = value_serde if value_serde is not None else Serdes.String()
        self.time = 0
        self.stream_time = -1
        self.logged: list[tuple[str, bytes, bytes | None, int]] = []
        self.registered: list[tuple[StateStore, Callable[..., None]]] = []
        self.dropped: list[str] = []

    def application_id(self) -> str:
        return "app"

    def task_id(self) -> str:
        return "0_0"

    def app_config(self) -> dict[str, Any]:
        return {"application.id": "app"}

    def forward(self, record: Record[Any, Any], child_name: str | None = None) -> None:
        raise AssertionError("stores never forward")

    def schedule(
        self, interval: int | timedelta, punctuation_type: PunctuationType, callback: Any
    ) -> Cancellable:
        raise AssertionError("stores never schedule")

    def get_state_store(self, name: str) -> StateStore:
        raise AssertionError("stores never look up stores")

    def commit(self) -> None:
        pass

    def current_stream_time_ms(self) -> int:
        return self.stream_time

    def current_system_time_ms(self) -> int:
        return 0

    def record_metadata(self) -> RecordMetadata | None:
        return RecordMetadata("in", 0, 0)

    def timestamp(self) -> int:
        return self.time

    def headers(self) -> Headers:
        return Headers()

    def key_serde(self) -> Any:
        return self._key_serde

    def value_serde(self) -> Any:
        return self._value_serde

    def log_change(self, store_name: str, key: bytes, value: bytes | None, timestamp: int) -> None:
        self.logged.append((store_name, key, value, timestamp))

    def register(self, store: StateStore, restore_callback: Callable[..., None]) -> None:
        self.registered.append((store, restore_callback))

    def record_dropped(self, reason: str = "") -> None:
        self.dropped.append(reason)


@pytest.fixture
def context() -> FakeContext:
    return FakeContext()


@pytest.fixture
def open_store() -> Callable[..., Any]:
    """Build a store from a builder and init it with a (given or fresh) FakeContext."""

    def make(builder: Any, ctx: FakeContext | None = None) -> Any:
        store = builder.build()
        store.init(ctx or FakeContext(), store)
        return store

    return make
