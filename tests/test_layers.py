"""The package's dependencies point one way, checked on every import statement (function-local too).

* The model (``kspark.kstream``, ``kspark.processor``, ``kspark.state``,
  ``kspark.serde``) and the reference runner (``kspark.testing``) import no
  Spark, no runner and no developer tool.
* The runner (``kspark.runtime``) imports no developer tool.
* Nothing in kspark imports ``kspark.dev`` but the command line and ``kspark.dev`` itself.

So the rules hold without anyone remembering them.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "kspark"

MODEL = ("kspark.kstream", "kspark.processor", "kspark.state", "kspark.serde", "kspark.testing")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in it, as absolute names."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            out.add(name)
            out.update(f"{name}.{alias.name}" for alias in node.names)
    return out


def _modules() -> dict[str, set[str]]:
    return {_module_name(p): _imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _violations(
    importers: tuple[str, ...], forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()
) -> list[str]:
    return sorted(
        f"{module} imports {name}"
        for module, imported in _modules().items()
        if _within(module, importers) and not _within(module, allowed)
        for name in imported
        if _within(name, forbidden)
    )


def test_the_import_scan_sees_imports_in_functions() -> None:
    assert "kspark.runtime.spark.settings" in _imports(PACKAGE / "kafka_streams.py")
    assert "pyspark.sql" in _imports(PACKAGE / "runtime" / "spark" / "lowering.py")  # inside functions


def test_the_model_and_the_reference_runner_import_no_spark_no_runner_and_no_dev_tools() -> None:
    assert (
        _violations(MODEL, ("pyspark", "py4j", "kspark.runtime", "kspark.dev", "kspark.kafka_streams")) == []
    )


def test_the_runner_imports_no_dev_tools() -> None:
    assert _violations(("kspark.runtime",), ("kspark.dev",)) == []


def test_nothing_but_the_command_line_imports_dev_tools() -> None:
    assert _violations(("kspark",), ("kspark.dev",), allowed=("kspark.dev", "kspark.cli")) == []
