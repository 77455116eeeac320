"""Deserialization, processing and production exception handlers.

A handler decides whether a failing record stops the task (``FAIL``) or is
dropped and counted in ``dropped-records-total`` (``CONTINUE``), as Kafka
Streams' ``DeserializationExceptionHandler``, ``ProcessingExceptionHandler``
and ``ProductionExceptionHandler`` do. In the config a handler is a name
(``log_and_continue`` | ``log_and_fail``, or the Java class name), an
instance of :class:`ExceptionHandler`, or any callable
``(context: ErrorHandlerContext, record, exception) -> HandlerResponse``
(the strings ``"continue"``/``"fail"`` are accepted as responses). Defaults
are Kafka's: every handler fails.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from kspark.errors import ConfigException
from kspark.processor.api import Headers

__all__ = [
    "HandlerResponse",
    "ErrorHandlerContext",
    "ExceptionHandler",
    "LogAndContinueExceptionHandler",
    "LogAndFailExceptionHandler",
    "resolve_exception_handler",
    "HANDLER_NAMES",
    "to_response",
]

_log = logging.getLogger(__name__)


class HandlerResponse(Enum):
    """What to do with a failing record."""

    CONTINUE = "continue"
    FAIL = "fail"


@dataclass(frozen=True)
class ErrorHandlerContext:
    """Where the failure happened (Kafka's ``ErrorHandlerContext``).

    ``source_raw_key``/``source_raw_value`` are the bytes of the input record
    being processed when known (used for the dead-letter queue).
    """

    topic: str | None
    partition: int
    offset: int
    headers: Headers
    processor_node_id: str | None
    task_id: str
    timestamp: int
    source_raw_key: bytes | None = None
    source_raw_value: bytes | None = None
    origin: str | None = field(default=None)


def _where(context: ErrorHandlerContext | None) -> str:
    if context is None:
        return "no record context"
    return (
        f"processor node: {context.processor_node_id}, taskId: {context.task_id}, "
        f"source topic: {context.topic}, source partition: {context.partition}, "
        f"source offset: {context.offset}"
    )


class ExceptionHandler:
    """Base class of the built-in handlers; subclasses override ``handle``."""

    response = HandlerResponse.FAIL

    def handle(self, context: ErrorHandlerContext, record: Any, exception: BaseException) -> HandlerResponse:
        return self.response

    def __call__(
        self, context: ErrorHandlerContext, record: Any, exception: BaseException
    ) -> HandlerResponse:
        return self.handle(context, record, exception)


class LogAndContinueExceptionHandler(ExceptionHandler):
    """Log the failure and drop the record."""

    response = HandlerResponse.CONTINUE

    def handle(self, context: ErrorHandlerContext, record: Any, exception: BaseException) -> HandlerResponse:
        _log.warning("Exception caught (%s); continuing: %s", _where(context), exception)
        return HandlerResponse.CONTINUE


class LogAndFailExceptionHandler(ExceptionHandler):
    """Log the failure and stop processing (the default)."""

    response = HandlerResponse.FAIL

    def handle(self, context: ErrorHandlerContext, record: Any, exception: BaseException) -> HandlerResponse:
        _log.error("Exception caught (%s); failing: %s", _where(context), exception)
        return HandlerResponse.FAIL


HANDLER_NAMES: dict[str, type[ExceptionHandler]] = {
    "log_and_continue": LogAndContinueExceptionHandler,
    "log_and_fail": LogAndFailExceptionHandler,
    "LogAndContinueExceptionHandler": LogAndContinueExceptionHandler,
    "LogAndFailExceptionHandler": LogAndFailExceptionHandler,
    "LogAndContinueProcessingExceptionHandler": LogAndContinueExceptionHandler,
    "LogAndFailProcessingExceptionHandler": LogAndFailExceptionHandler,
    "DefaultProductionExceptionHandler": LogAndFailExceptionHandler,
}

Handler = Callable[[ErrorHandlerContext, Any, BaseException], Any]


def resolve_exception_handler(value: Any, key: str) -> Handler:
    """A handler callable from a config value (name, class, instance or callable)."""
    if value is None:
        return LogAndFailExceptionHandler()
    if isinstance(value, str):
        cls = HANDLER_NAMES.get(value.rsplit(".", 1)[-1])
        if cls is None:
            raise ConfigException(
                f"Invalid value {value!r} for configuration {key}: expected 'log_and_continue', "
                "'log_and_fail' or a callable (context, record, exception) -> HandlerResponse"
            )
        return cls()
    if isinstance(value, type) and issubclass(value, ExceptionHandler):
        return value()
    if callable(value):
        return value  # type: ignore[no-any-return]
    raise ConfigException(
        f"Invalid value {value!r} for configuration {key}: expected 'log_and_continue', "
        "'log_and_fail' or a callable (context, record, exception) -> HandlerResponse"
    )


def to_response(result: Any, what: str) -> HandlerResponse:
    """Normalise what a user handler returned; ``None`` or junk is an error, as in Kafka."""
    if isinstance(result, HandlerResponse):
        return result
    if isinstance(result, str) and result.lower() in ("continue", "fail"):
        return HandlerResponse(result.lower())
    raise TypeError(f"Invalid {what} response: {result!r} (expected HandlerResponse.CONTINUE or FAIL)")
