"""The local Spark driver's class-data sharing archive: a cold JVM loads Spark's classes from a map.

A kspark application starts in a cold JVM: the Spark session and the first micro-batch's planning
load and verify several thousand of Spark's classes (the SparkContext, Catalyst's analyser and
planner, code generation, the Kafka connector, the Python runners). HotSpot's application
class-data sharing (CDS) maps such classes, already parsed and verified, from an archive a previous
JVM wrote. W1-W4 at 1M records (bench/results/class-data-sharing/): from launch to the last output
2-4 s sooner (W1 10.3-12.8 s against 13.3-15.5), the first micro-batch itself unchanged.

Java 17 cannot keep such an archive by itself (``-XX:+AutoCreateSharedArchive`` is Java 19's), so
a session :func:`kspark.runtime.spark.session.create_spark_session` starts with a local master
(where the driver JVM is also the executor, and kspark launches it) does it here:

* the archive's name is a digest of what the JVM checks it against: the ``java`` Spark will run
  and its JDK's class image and ``libjvm.so`` (path, size and modification time), Spark's jars and
  the driver's extra class path. The jars a session adds (``spark.jars``: the Kafka connector, a
  user's) are loaded by Spark's own class loader, and the JVM matches such a class against the
  archive by its size and checksum, so one archive serves every set of them (the test suite ran
  three, which each wrote an archive of their own when they were part of the name);
* a session whose archive exists starts its JVM with ``-XX:SharedArchiveFile``;
* one whose archive does not exist asks its JVM to write it when it exits
  (``-XX:ArchiveClassesAtExit``), under a name of its own, holding the classes that run loaded;
  when the Python process exits, :func:`_keep_at_exit` lets the JVM exit (closing its standard
  input, as Spark's own shutdown does) and waits for it; only an exit status of 0, and a JVM that
  starts with the file (:func:`_maps`), rename it to the archive's name, atomically. A JVM that
  maps a partly written archive crashes (SIGBUS, seen here with truncated copies), so no JVM is
  given one that a killed process left half written;
* should a JVM given the archive still fail to start, the session drops the archive and starts
  without it (:func:`kspark.runtime.spark.session.create_spark_session`).

The run that writes the archive pays for it once: the JVM records what it loads (its first batch
was 1-2.5 s slower on W1 and W2) and its exit waits for the dump (about 8 s and 150-200 MB here). The
archive holds the classes that run loaded; removing ``$KSPARK_HOME/cds`` has the next run write it
again. The JVM's own CDS messages are turned off (``-Xlog:cds=off``): an archive it cannot use
(say, with a heap too large for compressed pointers) only means a start without it.
``spark.kspark.classDataSharing=false`` turns all of this off. The newest three archives are kept.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kspark.jvm.jars import kspark_home

__all__ = ["ArchivePlan", "archive_plan", "drop", "keep_archive_at_exit"]

_log = logging.getLogger(__name__)

_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
_KEPT = 3
"""Archives kept (one per Java and Spark): a machine running two kspark versions keeps both."""
_EXIT_WAIT_S = 60.0
"""How long an exiting Python process waits for its JVM to write the archive (~10 s here)."""


@dataclass(frozen=True)
class ArchivePlan:
    """What one session does with its archive: use ``path`` or write ``writing``, then keep it."""

    path: Path
    writing: Path | None

    def java_options(self) -> str:
        """The JVM options that use (or write) the archive."""
        if self.writing is None:
            return f"-XX:SharedArchiveFile={self.path} {_QUIET}"
        return f"-XX:ArchiveClassesAtExit={self.writing} {_QUIET}"


def _java() -> Path | None:
    """The ``java`` Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the one on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not Path(found).exists():
        return None
    return Path(found).resolve()


def _spark_jars() -> list[Path]:
    """The jars of the Spark that PySpark launches: ``$SPARK_HOME``'s, else its own."""
    import pyspark

    home = os.environ.get("SPARK_HOME")
    jars = Path(home) / "jars" if home else Path(pyspark.__file__).parent / "jars"
    return sorted(jars.glob("*.jar")) if jars.is_dir() else []


def _identity(paths: Iterable[Path]) -> list[str]:
    out = []
    for p in paths:
        try:
            st = p.stat()
        except OSError:
            out.append(f"{p}:missing")
            continue
        out.append(f"{p}:{st.st_size}:{st.st_mtime_ns}")
    return out


def archive_plan(class_path: str, directory: Path | None = None) -> ArchivePlan | None:
    """The archive of a local session whose driver has the extra ``class_path``
    (``spark.driver.extraClassPath``), or None when there can be none (no ``java`` found, or its
    directory cannot be written)."""
    java = _java()
    if java is None:
        return None
    directory = directory or kspark_home() / "cds"
    # Only what decides which classes load from where; the JVM checks the rest itself and starts
    # without an archive it cannot use (a different heap layout, say).
    jdk = [java, *(java.parent.parent / "lib" / f for f in ("modules", "server/libjvm.so"))]
    extra = [Path(p) for p in class_path.split(os.pathsep) if p]
    key = "\n".join([*_identity(jdk), *_identity(_spark_jars()), *_identity(extra)])
    name = f"spark-driver-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"
    path = directory / name
    if path.is_file():
        return ArchivePlan(path, None)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(directory)
    except OSError as e:
        _log.debug("no class-data archive: %s cannot be written (%s)", directory, e)
        return None
    return ArchivePlan(path, directory / f"{name}.{os.getpid()}.writing")


def _remove_abandoned(directory: Path) -> None:
    """Files a process that no longer runs was writing (killed before its JVM finished)."""
    for f in directory.glob("*.writing"):
        pid = f.suffixes[-2].lstrip(".") if len(f.suffixes) >= 2 else ""
        if pid.isdigit() and not _alive(int(pid)):
            f.unlink(missing_ok=True)


def _keep_newest(directory: Path) -> None:
    """Archives beyond the newest :data:`_KEPT` (an older Spark or Java) are removed; a
    JVM that has one mapped keeps reading it."""
    archives = sorted(directory.glob("spark-driver-*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[_KEPT:]:
        old.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def keep_archive_at_exit(plan: ArchivePlan, jvm: Any) -> None:
    """At this process's exit, wait for the session's JVM (``jvm``: the ``Popen`` PySpark started
    it with) to write ``plan.writing``, then make it the archive (see the module docstring)."""
    if plan.writing is None or jvm is None:
        return
    atexit.register(_keep_at_exit, plan, jvm)


def _keep_at_exit(plan: ArchivePlan, jvm: subprocess.Popen[bytes]) -> None:
    writing = plan.writing
    assert writing is not None
    try:
        if jvm.poll() is None:
            _log.info("kspark: the Spark driver writes its class-data archive (once): %s", plan.path)
            try:
                _stop_spark(jvm)
            except Exception as e:  # a JVM past saving: it still exits when its input closes
                _log.warning("stopping Spark before its JVM writes the class-data archive failed: %s", e)
            if jvm.stdin is not None:
                jvm.stdin.close()  # Spark's gateway exits when its standard input closes
            jvm.wait(timeout=_EXIT_WAIT_S)
        if jvm.returncode == 0 and writing.is_file() and _maps(writing):
            os.replace(writing, plan.path)
            _keep_newest(plan.path.parent)
            return
        _log.debug("class-data archive not kept: the JVM exited with %s", jvm.returncode)
    except (OSError, subprocess.TimeoutExpired, KeyboardInterrupt) as e:
        _log.debug("class-data archive not kept: %r", e)
    writing.unlink(missing_ok=True)


def _stop_spark(jvm: subprocess.Popen[bytes]) -> None:
    """Stop the SparkContext running on ``jvm``, if any, before that JVM exits: PySpark's
    accumulator server would otherwise read the closed connection and print a traceback (seen in
    ``kspark demo``'s output). Without this handler the interpreter exits first and never sees it."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is not None and getattr(SparkContext._gateway, "proc", None) is jvm:
        context.stop()


def _maps(archive: Path) -> bool:
    """Whether a JVM starts with ``archive``: it maps every region, so a file cut short crashes it
    (a file for another class path is only not used, and the JVM still starts)."""
    java = _java()
    if java is None:
        return False
    crash_log = archive.with_name(archive.name + ".hs_err.log")  # not the user's directory
    command = [
        str(java),
        f"-XX:SharedArchiveFile={archive}",
        *_QUIET.split(),
        f"-XX:ErrorFile={crash_log}",
        "-XX:-CreateCoredumpOnCrash",
        "-version",
    ]
    try:
        return subprocess.run(command, capture_output=True, timeout=60).returncode == 0
    finally:
        crash_log.unlink(missing_ok=True)


def drop(plan: ArchivePlan, error: BaseException) -> None:
    """Remove an archive a JVM failed to start with (the next run writes a new one)."""
    _log.warning(
        "the Spark driver did not start with the class-data archive %s (%s); removing it and "
        "starting without it",
        plan.path,
        error,
    )
    plan.path.unlink(missing_ok=True)
