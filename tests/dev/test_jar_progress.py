"""A first use says what it fetches: Maven's downloads told as progress lines, the commands that
start a JVM fetching their jars first, the bundle poms found in the installed package."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kspark import cli
from kspark.jvm import jars
from kspark.jvm.errors import JvmSetupError

_CENTRAL = "https://repo.maven.apache.org/maven2"


def _transfer(path: str, size: str) -> str:
    """A line as Maven prints it in batch mode when a file has arrived."""
    return f"[INFO] Downloaded from central: {_CENTRAL}/{path} ({size} at 1.0 MB/s)"


def test_progress_counts_downloads_and_tells_the_first_then_at_most_every_interval() -> None:
    told: list[str] = []
    times: Iterator[float] = iter([0.0, 0.5, 1.9, 2.5, 2.6])
    progress = jars.MavenProgress("kafka-broker", told.append, interval=2.0, clock=lambda: next(times))
    for line in (
        "[INFO] Scanning for projects...",
        f"[INFO] Downloading from central: {_CENTRAL}/org/a/a/1/a-1.pom",
        _transfer("org/a/a/1/a-1.pom", "1.5 kB"),
        _transfer("org/b/b/2/b-2.jar", "6.5 MB"),
        _transfer("org/c/c/3/c-3.jar", "529 B"),
        "[INFO] Copying b-2.jar to /somewhere/b-2.jar",
        _transfer("org/d/d/4/d-4.jar", "1.2 GB"),
        _transfer("org/e/e/5/e-5.jar", "10 kB"),
    ):
        progress.feed(line)
    assert told == [
        "kspark: kafka-broker: 1 file downloaded (0.0 MB), latest a-1.pom",
        "kspark: kafka-broker: 4 files downloaded (1206.5 MB), latest d-4.jar",
    ]
    assert (progress.files, progress.bytes) == (5, 1_500 + 6_500_000 + 529 + 1_200_000_000 + 10_000)
    assert progress.total() == "Maven downloaded 5 files, 1206.5 MB, poms and its plugins included"
    assert jars.MavenProgress("x", None).total().startswith("Maven downloaded nothing")


@pytest.fixture
def fake_maven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An ``mvn`` on PATH that 'downloads' a pom and a jar the way Maven reports it and copies the
    jar into the output directory; a ``JAVA_HOME`` for it. The cache: ``KSPARK_HOME``, returned."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text(
        "#!/bin/sh\n"
        'for arg; do case "$arg" in -DoutputDirectory=*) out="${arg#-DoutputDirectory=}";; esac; done\n'
        f"echo '{_transfer('org/x/x/1/x-1.pom', '2.0 kB')}'\n"
        f"echo '{_transfer('org/x/x/1/x-1.jar', '3.5 MB')}'\n"
        'printf jar > "$out/x-1.jar"\n'
    )
    mvn.chmod(0o755)
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    home = tmp_path / "home"
    monkeypatch.setenv("KSPARK_HOME", str(home))
    return home


def test_a_bundle_fetched_on_first_use_tells_its_progress(fake_maven: Path) -> None:
    told: list[str] = []
    paths = jars.resolve_bundle("kafka-broker", fake_maven, log=told.append)
    final = fake_maven / "jars" / "kafka-broker-4.1.1"
    assert paths == [final / "x-1.jar"]
    assert told[:2] == [
        f"kspark: fetching kafka-broker 4.1.1 jars from Maven Central into {final}",
        "kspark: kafka-broker: 1 file downloaded (0.0 MB), latest x-1.pom",  # the second within 2 s
    ]
    assert told[2].startswith("kspark: kafka-broker: 1 jars, 0.0 MB in ")
    assert told[2].endswith(" s (Maven downloaded 2 files, 3.5 MB, poms and its plugins included)")
    assert len(told) == 3


def test_demo_and_dev_kafka_fetch_missing_jars_first_on_stdout(
    fake_maven: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli._fetch_jars_first(["kafka-broker", "spark-kafka-connector"])
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert [line.split(" jars from")[0] for line in lines if " jars from " in line] == [
        "kspark: fetching kafka-broker 4.1.1",
        "kspark: fetching spark-kafka-connector 4.2.0",
    ]
    assert "kspark: spark-kafka-connector: 1 file downloaded (0.0 MB), latest x-1.pom" in lines
    assert all(line.startswith("kspark: ") for line in lines)
    cli._fetch_jars_first(["kafka-broker", "spark-kafka-connector"])  # cached: nothing to say
    assert capsys.readouterr() == ("", "")


def test_bundle_poms_are_installed_with_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KSPARK_JVM_DIR", raising=False)
    assert jars.jvm_dir() == Path(jars.__file__).resolve().parent
    for name in jars.BUNDLES:
        assert (jars.jvm_dir() / name / "pom.xml").is_file()


def test_a_jvm_dir_without_poms_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSPARK_JVM_DIR", str(tmp_path))
    with pytest.raises(JvmSetupError, match=f"KSPARK_JVM_DIR='{tmp_path}' has no kafka-broker/pom.xml"):
        jars.jvm_dir()
