"""The local driver's class-data sharing archive: written once at a clean exit, then mapped."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kspark.errors import ConfigException
from kspark.runtime.spark import class_data
from kspark.runtime.spark import session as session_mod
from kspark.runtime.spark.class_data import archive_plan

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _jvm_standin(writes: Path, status: int) -> subprocess.Popen[bytes]:
    """A process that, like Spark's gateway JVM, ends when its standard input closes: it then
    writes ``writes`` (the JVM's archive) and exits with ``status``."""
    code = f"import sys; sys.stdin.read(); open({str(writes)!r}, 'wb').write(b'x' * 64); sys.exit({status})"
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE)


def test_an_archive_is_written_under_a_name_of_its_own_and_kept_only_after_a_clean_exit(
    tmp_path: Path, spark: SparkSession
) -> None:
    from pyspark import SparkContext

    context = spark.sparkContext
    plan = archive_plan("", directory=tmp_path)
    assert plan is not None and plan.writing is not None
    assert plan.writing.name == f"{plan.path.name}.{os.getpid()}.writing"
    assert plan.java_options().startswith(f"-XX:ArchiveClassesAtExit={plan.writing} ")

    class_data._keep_at_exit(plan, _jvm_standin(plan.writing, 1))
    assert list(tmp_path.iterdir()) == []  # a failed JVM's file is never the archive

    class_data._keep_at_exit(plan, _jvm_standin(plan.writing, 0))
    assert list(tmp_path.iterdir()) == [plan.path]
    # Another JVM's archive is no reason to stop this process's Spark (the suite's shared session).
    assert SparkContext._active_spark_context is context
    again = archive_plan("", directory=tmp_path)
    assert again is not None and again.writing is None and again.path == plan.path
    assert again.java_options().split() == [
        f"-XX:SharedArchiveFile={plan.path}",
        "-Xlog:cds=off",
        "-Xlog:cds+dynamic=off",
    ]
    other = archive_plan(f"/y/other.jar{os.pathsep}/y/more.jar", directory=tmp_path)
    assert other is not None and other.path != plan.path  # another class path, another archive


def test_a_file_a_dead_process_was_writing_is_removed(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    abandoned = tmp_path / f"spark-driver-0.jsa.{int(dead.stdout)}.writing"
    live = tmp_path / f"spark-driver-0.jsa.{os.getpid()}.writing"
    abandoned.write_bytes(b"half")
    live.write_bytes(b"half")
    archive_plan("", directory=tmp_path)
    assert not abandoned.exists()
    assert live.exists()


def test_the_newest_three_archives_are_kept(tmp_path: Path) -> None:
    for i in range(5):
        f = tmp_path / f"spark-driver-{i}.jsa"
        f.write_bytes(b"x")
        os.utime(f, (1_000_000 + i, 1_000_000 + i))
    class_data._keep_newest(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"spark-driver-{i}.jsa" for i in (2, 3, 4)]


def test_only_a_local_session_with_kspark_s_jvm_options_uses_an_archive() -> None:
    def options(conf: dict[str, str]) -> str:
        return session_mod.spark_settings(conf)["spark.driver.extraJavaOptions"]

    assert "-XX:SharedArchiveFile=" in options({}) or "-XX:ArchiveClassesAtExit=" in options({})
    assert "-XX:" not in options({"spark.kspark.classDataSharing": "false"}).replace("-XX:+UseParallel", "")
    assert "Archive" not in options({"spark.master": "spark://host:7077"})
    assert options({"spark.driver.extraJavaOptions": "-Dx=1"}) == "-Dx=1"
    # The jars a session adds do not change the archive: Spark's class loader loads them.
    assert options({}) == options({"spark.jars": "/x/extra.jar"})
    with pytest.raises(ConfigException, match="classDataSharing must be true or false"):
        options({"spark.kspark.classDataSharing": "yes"})


_CHILD = textwrap.dedent(
    """
    import subprocess, sys
    from pathlib import Path
    from pyspark import SparkContext
    from kspark.runtime.spark import class_data
    from kspark.runtime.spark.session import create_spark_session

    class_data.kspark_home = lambda: Path(sys.argv[1])
    spark = create_spark_session({"spark.master": "local[1]"})
    assert spark.range(100).selectExpr("sum(id)").collect()[0][0] == 4950
    # Python tasks: the JVM connects to PySpark's accumulator server, which must not see it exit.
    assert spark.sparkContext.parallelize(range(10)).map(lambda x: x * 2).sum() == 90
    info = subprocess.run(
        ["jcmd", str(SparkContext._gateway.proc.pid), "VM.info"], capture_output=True, text=True
    ).stdout
    print("MAPPED", next(line for line in info.splitlines() if "CDS archive(s) mapped at" in line))
    """
)


def _session(home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _CHILD, str(home)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        cwd=home,  # where a crashing JVM would leave its hs_err file
    )


def _top_archive_bytes(session: subprocess.CompletedProcess[str]) -> int:
    """What a session's JVM mapped beyond the JDK's own archive: ``[base-top-end)``."""
    m = re.search(r"MAPPED .*\[0x([0-9a-f]+)-0x([0-9a-f]+)-0x([0-9a-f]+)\)", session.stdout)
    assert m, session.stdout
    return int(m.group(3), 16) - int(m.group(2), 16)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("jcmd") is None, reason="needs the JDK's jcmd to see what the JVM mapped")
def test_the_first_session_writes_the_archive_the_next_maps_it_and_a_broken_one_is_dropped(
    tmp_path: Path,
) -> None:
    """HotSpot reports the regions it mapped: the JDK's own archive, then the dynamic one on top."""
    first = _session(tmp_path)
    assert _top_archive_bytes(first) == 0, "no archive yet: only the JDK's own is mapped"
    assert "Traceback" not in first.stderr, first.stderr  # the exit that waited for the JVM is quiet
    archives = list((tmp_path / "cds").glob("spark-driver-*.jsa"))
    assert len(archives) == 1 and archives[0].stat().st_size > 10_000_000
    assert not list((tmp_path / "cds").glob("*.writing"))
    assert _top_archive_bytes(_session(tmp_path)) > 10_000_000, "Spark's classes come from the archive"

    # A file cut short crashes a JVM that maps it: never kept, and dropped if one is found.
    archive = archives[0]
    cut = tmp_path / "cut.jsa"
    cut.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    assert class_data._maps(archive) and not class_data._maps(cut)
    archive.chmod(0o644)
    os.replace(cut, archive)
    third = _session(tmp_path)
    assert _top_archive_bytes(third) == 0
    assert "did not start with the class-data archive" in third.stderr
    assert not archive.exists()
