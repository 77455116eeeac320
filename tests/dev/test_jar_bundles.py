"""JVM bundle cache: resolution, offline reuse, atomicity, Maven bootstrap, errors."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kspark.jvm import jars
from kspark.jvm.errors import ArtifactResolutionError, JavaNotFoundError, JvmSetupError


def test_every_bundle_has_a_pom_naming_its_version() -> None:
    for bundle in jars.BUNDLES.values():
        pom = (jars.jvm_dir() / bundle.name / "pom.xml").read_text()
        assert f"<artifactId>{bundle.name}</artifactId>" in pom
        assert f"<version>{bundle.version}</version>" in pom


def test_unknown_bundle_names_the_known_ones() -> None:
    with pytest.raises(JvmSetupError, match="kafka-broker"):
        jars.resolve_bundle("no-such-bundle")


def test_cached_bundle_is_reused_without_java_or_maven(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A complete stamp matching the pom is all a later run needs: prove it by
    # making java and mvn unfindable.
    home = tmp_path / "home"
    directory = jars.bundle_dir("kafka-broker", home)
    directory.mkdir(parents=True)
    (directory / "a.jar").write_bytes(b"x")
    (directory / "b.jar").write_bytes(b"y")
    pom_sha = hashlib.sha256((jars.jvm_dir() / "kafka-broker" / "pom.xml").read_bytes()).hexdigest()
    (directory / ".kspark-complete.json").write_text(json.dumps({"pom_sha256": pom_sha}))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert jars.resolve_bundle("kafka-broker", home) == [directory / "a.jar", directory / "b.jar"]
    assert jars.is_resolved("kafka-broker", home)


def test_directory_without_stamp_counts_as_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What an interrupted run could leave if it wrote in place: jars, no stamp.
    directory = jars.bundle_dir("kafka-broker", tmp_path)
    directory.mkdir(parents=True)
    (directory / "half.jar").write_bytes(b"x")
    assert not jars.is_resolved("kafka-broker", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(JavaNotFoundError):
        jars.resolve_bundle("kafka-broker", tmp_path)


def test_stale_stamp_from_another_pom_is_not_trusted(tmp_path: Path) -> None:
    directory = jars.bundle_dir("spark-kafka-connector", tmp_path)
    directory.mkdir(parents=True)
    (directory / ".kspark-complete.json").write_text(json.dumps({"pom_sha256": "0" * 64}))
    assert not jars.is_resolved("spark-kafka-connector", tmp_path)


def test_no_java_says_install_java_17(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nojdk"))
    with pytest.raises(JavaNotFoundError, match="Java 17") as info:
        jars.find_java()
    assert "JAVA_HOME" in str(info.value)


def test_java_home_wins_over_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert jars.find_java() == java


class _Repo:
    """A tiny HTTP 'Maven Central' serving a fake Maven distribution."""

    def __init__(self, root: Path) -> None:
        self.root = root
        handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(  # noqa: E731
            *a, directory=str(root), **k
        )
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.RequestHandlerClass.log_message = lambda *a: None  # type: ignore[method-assign]
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def publish_maven(self, sha512: str | None = None) -> None:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            script = b"#!/bin/sh\necho fake maven\n"
            info = tarfile.TarInfo(f"apache-maven-{jars.MAVEN_VERSION}/bin/mvn")
            info.size = len(script)
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(script))
        data = buf.getvalue()
        d = self.root / "org/apache/maven/apache-maven" / jars.MAVEN_VERSION
        d.mkdir(parents=True, exist_ok=True)
        name = f"apache-maven-{jars.MAVEN_VERSION}-bin.tar.gz"
        (d / name).write_bytes(data)
        digest = sha512 or hashlib.sha512(data).hexdigest()
        (d / (name + ".sha512")).write_text(f"{digest}  {name}\n")


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[_Repo]:
    r = _Repo(tmp_path / "repo")
    r.root.mkdir()
    yield r
    r.server.shutdown()


def test_bootstrap_maven_verifies_and_installs_atomically(tmp_path: Path, repo: _Repo) -> None:
    repo.publish_maven()
    mvn = jars.bootstrap_maven(tmp_path / "home", base_url=repo.url)
    assert mvn == tmp_path / "home" / "tools" / f"apache-maven-{jars.MAVEN_VERSION}" / "bin" / "mvn"
    assert os.access(mvn, os.X_OK)
    # No temporary directories are left behind.
    assert sorted(
        p.name for p in (tmp_path / "home" / "tools").iterdir() if not p.name.startswith(".lock")
    ) == [f"apache-maven-{jars.MAVEN_VERSION}"]
    # Second call: cached, no server needed.
    repo.server.shutdown()
    assert jars.bootstrap_maven(tmp_path / "home", base_url="http://127.0.0.1:9") == mvn


def test_bootstrap_maven_rejects_a_bad_checksum(tmp_path: Path, repo: _Repo) -> None:
    repo.publish_maven(sha512="ab" * 64)
    with pytest.raises(ArtifactResolutionError, match="SHA-512"):
        jars.bootstrap_maven(tmp_path / "home", base_url=repo.url)
    tools = tmp_path / "home" / "tools"
    assert not (tools / f"apache-maven-{jars.MAVEN_VERSION}").exists()
    assert [p.name for p in tools.iterdir() if p.name.startswith(".tmp")] == []


def test_unreachable_repository_says_first_run_needs_maven_central(tmp_path: Path) -> None:
    with pytest.raises(ArtifactResolutionError, match="first run needs Maven Central"):
        jars.bootstrap_maven(tmp_path / "home", base_url="http://127.0.0.1:9")


def test_maven_failure_offline_names_artifact_and_maven_central(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fake mvn that fails the way Maven does without network.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text(
        "#!/bin/sh\necho '[ERROR] Failed to execute goal: Could not transfer artifact "
        "org.apache.kafka:kafka_2.13:pom:4.1.1 from/to central: Unknown host repo.maven.apache.org'\nexit 1\n"
    )
    mvn.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(ArtifactResolutionError) as info:
        jars.resolve_bundle("kafka-broker", tmp_path / "home")
    msg = str(info.value)
    assert "org.apache.kafka:kafka_2.13:4.1.1" in msg
    assert "first run needs Maven Central" in msg
    # Nothing half-written: no bundle directory, no temporary directory.
    assert [p.name for p in (tmp_path / "home" / "jars").iterdir() if not p.name.startswith(".lock")] == []


@pytest.mark.integration
def test_real_bundles_resolve_to_the_pinned_jars() -> None:
    connector = {p.name for p in jars.resolve_bundle("spark-kafka-connector")}
    assert connector == {
        "spark-sql-kafka-0-10_2.13-4.2.0.jar",
        "spark-token-provider-kafka-0-10_2.13-4.0.0.jar",
        "kafka-clients-3.9.2.jar",
        "commons-pool2-2.13.1.jar",
    }
    broker = {p.name for p in jars.resolve_bundle("kafka-broker")}
    assert "kafka_2.13-4.1.1.jar" in broker
    assert "log4j-slf4j-impl-2.24.3.jar" in broker


def test_staged_dir_replaces_the_old_entry_only_when_the_new_one_is_complete(tmp_path: Path) -> None:
    final = tmp_path / "cache" / "entry"
    final.mkdir(parents=True)
    (final / "old").write_text("old")
    with pytest.raises(RuntimeError, match="build failed"), jars.staged_dir(final) as tmp:
        (tmp / "half").write_text("x")
        raise RuntimeError("build failed")
    assert [p.name for p in final.iterdir()] == ["old"]  # untouched, and no temp dir left
    assert [p.name for p in final.parent.iterdir()] == ["entry"]
    with jars.staged_dir(final) as tmp:
        (tmp / "new").write_text("new")
    assert [p.name for p in final.iterdir()] == ["new"]
    assert [p.name for p in final.parent.iterdir()] == ["entry"]
