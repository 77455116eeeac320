"""The scenario catalog: every scenario of every module here, by name.

``reference``: the scenarios first written against Java Kafka Streams'
driver. More modules join the list below; a name is unique across them.
"""

from __future__ import annotations

from ..model import Scenario
from . import (
    conformance,
    ported_cogroup,
    ported_fk_joins,
    ported_joins,
    ported_sessions,
    ported_sliding,
    ported_stores,
    ported_suppress,
    ported_tables,
    ported_transform_values,
    ported_versioned,
    ported_windows,
    reference,
    rocksdb_scans,
)

__all__ = ["CATALOG", "BY_NAME", "MODULES"]

MODULES = (
    reference,
    conformance,
    ported_windows,
    ported_sliding,
    ported_sessions,
    ported_suppress,
    ported_joins,
    ported_tables,
    ported_transform_values,
    ported_cogroup,
    ported_fk_joins,
    ported_versioned,
    ported_stores,
    rocksdb_scans,
)

CATALOG: list[Scenario] = [s for module in MODULES for s in module.SCENARIOS]

BY_NAME: dict[str, Scenario] = {}
for _s in CATALOG:
    if _s.name in BY_NAME:
        raise ValueError(f"two catalog scenarios are named {_s.name}")
    BY_NAME[_s.name] = _s
