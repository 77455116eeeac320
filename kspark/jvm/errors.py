"""Exceptions raised while finding Java or resolving jar bundles.

Each names what went wrong and what to do about it, because the usual reader
is someone on a fresh machine running ``./dev test`` for the first time.
"""

from __future__ import annotations

__all__ = ["JvmSetupError", "JavaNotFoundError", "ArtifactResolutionError"]


class JvmSetupError(RuntimeError):
    """Base class of the errors of :mod:`kspark.jvm`: a JVM part could not be set up."""


class JavaNotFoundError(JvmSetupError):
    """No usable ``java`` executable: kspark's JVM parts need Java 17+."""


class ArtifactResolutionError(JvmSetupError):
    """A JVM bundle (or Maven itself) could not be downloaded or verified."""
