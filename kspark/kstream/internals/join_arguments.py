"""Telling ``KTable.join`` / ``left_join``'s two shapes apart, as Java's overloads do.

* key join: ``(other, joiner[, named][, materialized])``;
* foreign-key join: ``(other, foreign_key_extractor, joiner[, table_joined][, materialized])``,
  where ``table_joined`` may also be a ``Materialized`` (Java's
  ``join(other, fk, joiner, materialized)``), and ``named=`` is accepted as
  a shorthand for ``TableJoined.as_(name)``.

A foreign-key join is recognised by a function in the third position (a key
join's ``named`` never is one), a function before ``joiner=``, or the
keywords ``foreign_key_extractor`` / ``table_joined``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kspark.kstream.config_objects import Materialized, Named
from kspark.kstream.table_joined import TableJoined

__all__ = ["JoinArguments", "split_join_arguments"]

_KEY_JOIN = ("joiner", "named", "materialized")
_FK_JOIN = ("foreign_key_extractor", "joiner", "table_joined", "materialized")


@dataclass
class JoinArguments:
    """One call's arguments; ``foreign_key_extractor`` is None for a key join."""

    joiner: Callable[..., Any]
    foreign_key_extractor: Callable[..., Any] | None = None
    named: Named | str | Materialized | None = None
    table_joined: TableJoined = field(default_factory=TableJoined)
    materialized: Materialized | None = None


def _is_function(x: Any) -> bool:
    return callable(x) and not isinstance(x, Named | str | Materialized | TableJoined)


def split_join_arguments(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> JoinArguments:
    where = f"KTable.{op}"
    foreign = (
        "foreign_key_extractor" in kwargs
        or "table_joined" in kwargs
        # the key join's third argument (named) is never a function
        or (len(args) >= 2 and _is_function(args[1]))
        or (len(args) == 1 and _is_function(args[0]) and "joiner" in kwargs)
    )
    names = _FK_JOIN if foreign else _KEY_JOIN
    extra = ("named",) if foreign else ()
    if len(args) > len(names):
        raise TypeError(f"{where} takes at most {len(names) + 1} positional arguments, got {len(args) + 1}")
    given: dict[str, Any] = dict(zip(names, args, strict=False))
    for key, value in kwargs.items():
        if key not in names and key not in extra:
            raise TypeError(f"{where} got an unexpected keyword argument {key!r}")
        if key in given:
            raise TypeError(f"{where} got multiple values for argument {key!r}")
        given[key] = value
    if given.get("joiner") is None:
        raise ValueError(f"joiner can't be None ({where})")
    if not foreign:
        return JoinArguments(
            given["joiner"], None, given.get("named"), materialized=given.get("materialized")
        )
    table_joined = given.get("table_joined")
    materialized = given.get("materialized")
    if isinstance(table_joined, Materialized):
        if materialized is not None:
            raise TypeError(f"{where}: table_joined must be a TableJoined, got {table_joined!r}")
        table_joined, materialized = None, table_joined
    if table_joined is None:
        table_joined = TableJoined()
    if not isinstance(table_joined, TableJoined):
        raise TypeError(f"{where}: table_joined must be a TableJoined, got {table_joined!r}")
    if materialized is not None and not isinstance(materialized, Materialized):
        raise TypeError(f"{where}: materialized must be a Materialized, got {materialized!r}")
    named = given.get("named")
    if named is not None:
        name = named.name if isinstance(named, Named) else named
        if not isinstance(name, str):
            raise TypeError(f"{where}: named must be a Named or a str, got {named!r}")
        if table_joined.name is not None and table_joined.name != name:
            raise ValueError(f"{where}: named={name!r} and table_joined name {table_joined.name!r} disagree")
        table_joined = table_joined.with_name(name)
    if given.get("foreign_key_extractor") is None:
        raise ValueError(f"foreign_key_extractor can't be None ({where})")
    return JoinArguments(given["joiner"], given["foreign_key_extractor"], None, table_joined, materialized)
