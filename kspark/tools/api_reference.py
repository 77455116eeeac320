"""The API reference: HTML pages of kspark's public modules, made from their docstrings by pdoc.

::

    python -m kspark.tools.api_reference build/api     # then open build/api/index.html

:data:`PUBLIC_MODULES` are the modules a user imports from (shared/API.md);
each gets a page with its classes, functions and their docstrings, linked to
each other. pdoc (``pip install pdoc==16.0.0``, in kspark's ``test`` extra)
is imported only here. pdoc warns when it cannot read something (an
annotation it cannot evaluate, a module it cannot import); :func:`build`
returns those warnings, and the command fails on any that is not in
:data:`KNOWN_WARNINGS`. ``tests/tools/test_docs.py`` builds the reference the
same way and checks its links.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

__all__ = ["PUBLIC_MODULES", "KNOWN_WARNINGS", "build", "unexpected", "main"]

PUBLIC_MODULES: tuple[str, ...] = (
    "kspark",
    "kspark.kstream",
    "kspark.processor",
    "kspark.state",
    "kspark.serde",
    "kspark.testing",
    "kspark.query",
    "kspark.errors",
    "kspark.kafka_streams",
    "kspark.config",
    "kspark.metrics",
    "kspark.dev",
)
"""The modules documented: a page each."""

KNOWN_WARNINGS: tuple[str, ...] = (
    # pdoc evaluates the string annotations of a typing.NamedTuple's generated __new__ outside the
    # class's module, so names that module imports or defines (K, V, Sequence) are unknown to it.
    "Error parsing type annotation ForwardRef('K') for kspark.KeyValue.__init__.",
    "Error parsing type annotation ForwardRef('V') for kspark.KeyValue.__init__.",
    "Error parsing type annotation ForwardRef('Sequence[tuple[str, bytes]] | None') for "
    "kspark.dev.ProduceRecord.__init__.",
    # A private attribute's annotation that is valid only unevaluated (weakref.finalize is not
    # subscriptable at run time); pdoc evaluates it although it does not show the attribute.
    "Error parsing type annotation weakref.finalize[..., LocalKafka] | None for "
    "kspark.dev.kafka.LocalKafka._finalizer:",
)
"""Warnings pdoc gives today that say nothing about the documentation users read: each is the
start of one warning's text."""


def build(output_directory: Path, modules: Sequence[str] = PUBLIC_MODULES) -> list[str]:
    """Write the HTML pages of ``modules`` (and ``index.html``) into ``output_directory``; return
    the text of every warning pdoc gave."""
    import pdoc
    import pdoc.render

    from kspark import __version__

    pdoc.render.configure(
        docformat="restructuredtext",
        footer_text=f"kspark {__version__}",
        show_source=False,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*modules, output_directory=Path(output_directory))
    return [str(w.message) for w in caught]


def unexpected(messages: Sequence[str]) -> list[str]:
    """The warnings of ``messages`` that are not :data:`KNOWN_WARNINGS`."""
    return [m for m in messages if not m.startswith(KNOWN_WARNINGS)]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m kspark.tools.api_reference [OUTPUT_DIRECTORY]`` (default ``build/api``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) > 1 or (args and args[0].startswith("-")):
        print("usage: python -m kspark.tools.api_reference [OUTPUT_DIRECTORY]", file=sys.stderr)
        return 2
    output = Path(args[0] if args else "build/api")
    try:
        messages = build(output)
    except ModuleNotFoundError as e:
        if e.name != "pdoc":
            raise
        print("the API reference is built with pdoc: pip install pdoc==16.0.0", file=sys.stderr)
        return 1
    bad = unexpected(messages)
    for message in bad:
        print(f"pdoc: {message}", file=sys.stderr)
    print(f"API reference of {len(PUBLIC_MODULES)} modules in {output}/index.html")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
