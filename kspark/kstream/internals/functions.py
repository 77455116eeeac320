"""Adapting user functions: value-only or with-key variants, as Kafka's
``ValueMapper`` / ``ValueMapperWithKey``.

Python has no overloads, so the DSL looks at how many positional
parameters a function takes: ``map_values(lambda v: ...)`` gets the value,
``map_values(lambda k, v: ...)`` gets the key too. Joiners likewise take
``(value1, value2)`` or ``(key, value1, value2)``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["positional_arity", "with_key", "require_callable"]


def positional_arity(fn: Callable[..., Any]) -> int | None:
    """How many positional arguments ``fn`` accepts (None: variadic or unknown)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    count = 0
    for p in sig.parameters.values():
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            return None
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


def with_key(fn: Callable[..., Any], value_args: int) -> Callable[..., Any]:
    """``fn`` as a function of ``(key, *values)``; ``fn`` may take the values only."""
    if positional_arity(fn) == value_args + 1:
        return fn
    return lambda _key, *values: fn(*values)


def require_callable(fn: Any, what: str, operation: str) -> None:
    if fn is None:
        raise ValueError(f"{what} can't be None ({operation})")
    if not callable(fn):
        raise TypeError(f"{what} must be callable ({operation}), got {fn!r}")
