"""JVM artifact bundles: resolve once from Maven Central, then reuse offline.

kspark needs three sets of jars, each described by a small pom installed with
the package (``kspark/jvm/<bundle>/pom.xml``):

* ``kafka-broker``: Apache Kafka 4.1.1, run by :class:`kspark.dev.LocalKafka`;
* ``spark-kafka-connector``: Spark's Kafka source and sink for PySpark 4.2.0;
* ``kafka-streams``: Java Kafka Streams 4.1.1, for reference harnesses only.

A bundle is resolved by running ``mvn dependency:copy-dependencies`` into a
temporary directory that is renamed to
``${KSPARK_HOME:-~/.cache/kspark}/jars/<bundle>-<version>/`` only after Maven
succeeded and a completion stamp was written, so an interrupted download never
looks finished. Later calls read the stamp and touch no network. When ``mvn``
is not on ``PATH``, Apache Maven itself is downloaded from Maven Central,
checked against its published SHA-512, and kept in the same cache. Given a
``log``, a download says what it fetches and how far it got, a line at a time.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from kspark.jvm.errors import ArtifactResolutionError, JavaNotFoundError, JvmSetupError

__all__ = [
    "Bundle",
    "BUNDLES",
    "DEFAULT_BUNDLES",
    "MAVEN_CENTRAL",
    "MAVEN_VERSION",
    "kspark_home",
    "jvm_dir",
    "find_java",
    "find_maven",
    "bootstrap_maven",
    "bundle_dir",
    "staged_dir",
    "is_resolved",
    "resolve_bundle",
    "classpath",
    "compile_java",
    "MavenProgress",
]

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
MAVEN_VERSION = "3.9.9"
_STAMP = ".kspark-complete.json"
# Markers in Maven's output that mean "could not reach the repository", as
# opposed to a broken pom; they decide which advice the error gives.
_NETWORK_MARKERS = (
    "Could not transfer",
    "UnknownHostException",
    "Unknown host",
    "Connection refused",
    "Network is unreachable",
    "connect timed out",
    "Connect to ",
    "No route to host",
    "was not found in",
    "Could not resolve dependencies",
)
# Maven's transfer line in batch mode (-B), one per file it downloads:
# "[INFO] Downloaded from central: https://repo.maven.apache.org/.../x-1.0.jar (12 kB at 30 kB/s)".
_DOWNLOADED = re.compile(r"Downloaded from [^:\s]+: (?P<url>\S+) \((?P<size>[\d.]+) (?P<unit>[kMG]?B)\b")
_UNITS = {"B": 1, "kB": 1_000, "MB": 1_000_000, "GB": 1_000_000_000}
_Log = Callable[[str], None]


@dataclass(frozen=True)
class Bundle:
    """One set of jars named by ``jvm/<name>/pom.xml``."""

    name: str
    version: str
    coordinates: tuple[str, ...]
    """Main Maven coordinates, quoted in errors and docs."""
    purpose: str

    @property
    def key(self) -> str:
        """Directory name of the bundle in the cache."""
        return f"{self.name}-{self.version}"


BUNDLES: dict[str, Bundle] = {
    b.name: b
    for b in (
        Bundle(
            "kafka-broker",
            "4.1.1",
            ("org.apache.kafka:kafka_2.13:4.1.1",),
            "Apache Kafka broker for LocalKafka, tests and the demo",
        ),
        Bundle(
            "spark-kafka-connector",
            "4.2.0",
            (
                "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",
                "org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.0.0",
                "org.apache.kafka:kafka-clients:3.9.2",
                "org.apache.commons:commons-pool2:2.13.1",
            ),
            "Spark Structured Streaming's Kafka source and sink",
        ),
        Bundle(
            "kafka-streams",
            "4.1.1",
            (
                "org.apache.kafka:kafka-streams:4.1.1",
                "org.apache.kafka:kafka-streams-test-utils:4.1.1",
            ),
            "Java Kafka Streams, for benchmark and reference harnesses",
        ),
    )
}

DEFAULT_BUNDLES: tuple[str, ...] = ("kafka-broker", "spark-kafka-connector")
"""What ``kspark fetch-jars`` fetches without arguments: what tests and the demo use."""


def kspark_home() -> Path:
    """The cache root: ``$KSPARK_HOME`` or ``~/.cache/kspark``."""
    env = os.environ.get("KSPARK_HOME")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "kspark"


def jvm_dir() -> Path:
    """The directory holding ``<bundle>/pom.xml``.

    ``$KSPARK_JVM_DIR`` wins; otherwise this package's directory, where the
    poms are in a checkout, in an editable install and in an installed wheel.
    """
    env = os.environ.get("KSPARK_JVM_DIR")
    if env:
        directory = Path(env).expanduser()
        if not (directory / "kafka-broker" / "pom.xml").is_file():
            raise JvmSetupError(
                f"KSPARK_JVM_DIR={env!r} has no kafka-broker/pom.xml; point it at a directory "
                "with a <bundle>/pom.xml per bundle, or unset it to use the poms installed with kspark"
            )
        return directory
    directory = Path(__file__).resolve().parent
    if not (directory / "kafka-broker" / "pom.xml").is_file():
        raise JvmSetupError(
            f"kspark's JVM bundle poms are missing from {directory} (an incomplete install?); "
            "reinstall kspark, or point KSPARK_JVM_DIR at a directory with a <bundle>/pom.xml per bundle"
        )
    return directory


def find_java() -> Path:
    """The ``java`` to run: ``$JAVA_HOME/bin/java`` if set, else ``java`` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("java")
    if found:
        return Path(found)
    where = f"JAVA_HOME={java_home!r} has no bin/java and " if java_home else ""
    raise JavaNotFoundError(
        f"{where}no `java` on PATH: kspark runs Kafka and Spark on the JVM. "
        "Install Java 17 (e.g. `apt-get install openjdk-17-jre-headless`) "
        "and put it on PATH or set JAVA_HOME."
    )


def _java_env(java: Path) -> dict[str, str]:
    """Environment for Maven: make it use the same java we found."""
    env = dict(os.environ)
    if "JAVA_HOME" not in env or not (Path(env["JAVA_HOME"]) / "bin" / "java").exists():
        env["JAVA_HOME"] = str(java.resolve().parents[1])
    return env


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Serialise resolution of one bundle across processes (tests, demo, CLI)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _download(url: str, dest: Path, timeout: float = 60.0) -> None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(dest, "wb") as out:
            shutil.copyfileobj(resp, out, length=1 << 20)
    except (urllib.error.URLError, OSError) as exc:
        raise ArtifactResolutionError(
            f"could not download {url}: {exc}. The first run needs Maven Central; later runs use the cache."
        ) from exc


def bootstrap_maven(
    home: Path | None = None, base_url: str = MAVEN_CENTRAL, *, log: _Log | None = None
) -> Path:
    """Download Apache Maven into the cache (once) and return its ``bin/mvn``.

    The archive is checked against the ``.sha512`` published beside it and
    unpacked into a temporary directory that is renamed into place last.
    ``log`` is told when the download starts and when Maven is ready.
    """
    home = home or kspark_home()
    tools = home / "tools"
    final = tools / f"apache-maven-{MAVEN_VERSION}"
    mvn = final / "bin" / "mvn"
    if mvn.is_file():
        return mvn
    tools.mkdir(parents=True, exist_ok=True)
    with _locked(tools / ".lock-maven"):
        if mvn.is_file():
            return mvn
        name = f"apache-maven-{MAVEN_VERSION}-bin.tar.gz"
        url = f"{base_url}/org/apache/maven/apache-maven/{MAVEN_VERSION}/{name}"
        if log:
            log(f"kspark: no mvn on PATH: downloading Apache Maven {MAVEN_VERSION} into {tools} ({url})")
        started = time.monotonic()
        with tempfile.TemporaryDirectory(dir=tools, prefix=".tmp-maven-") as tmp:
            archive = Path(tmp) / name
            _download(url, archive)
            _download(url + ".sha512", Path(tmp) / "sha512")
            published = (Path(tmp) / "sha512").read_text().split()
            actual = hashlib.sha512(archive.read_bytes()).hexdigest()
            if not published or published[0].lower() != actual:
                raise ArtifactResolutionError(
                    f"{url} does not match its published SHA-512 "
                    f"(expected {published[0] if published else 'nothing'}, got {actual}); "
                    "refusing to run it"
                )
            unpack = Path(tmp) / "unpacked"
            with tarfile.open(archive) as tar:
                tar.extractall(unpack, filter="data")
            inner = unpack / f"apache-maven-{MAVEN_VERSION}"
            if not (inner / "bin" / "mvn").is_file():
                raise ArtifactResolutionError(f"{url} has no apache-maven-{MAVEN_VERSION}/bin/mvn")
            os.rename(inner, final)
            if log:
                size = archive.stat().st_size / 1e6
                seconds = time.monotonic() - started
                log(f"kspark: Apache Maven {MAVEN_VERSION}: {size:.1f} MB, SHA-512 checked, {seconds:.1f} s")
    return mvn


def find_maven(home: Path | None = None, base_url: str = MAVEN_CENTRAL, *, log: _Log | None = None) -> Path:
    """``mvn`` on PATH, else a Maven bootstrapped into the cache."""
    found = shutil.which("mvn")
    if found:
        return Path(found)
    return bootstrap_maven(home, base_url, log=log)


def bundle_dir(name: str, home: Path | None = None) -> Path:
    """Where bundle ``name`` lives (or will live) in the cache."""
    return (home or kspark_home()) / "jars" / _bundle(name).key


def _bundle(name: str) -> Bundle:
    try:
        return BUNDLES[name]
    except KeyError:
        raise JvmSetupError(
            f"unknown JVM bundle {name!r}; known bundles: {', '.join(sorted(BUNDLES))}"
        ) from None


def _pom(name: str) -> Path:
    return jvm_dir() / name / "pom.xml"


def _read_stamp(directory: Path) -> dict[str, object] | None:
    try:
        data = json.loads((directory / _STAMP).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _stamp_matches(directory: Path, pom_sha: str | None) -> bool:
    stamp = _read_stamp(directory)
    if stamp is None:
        return False
    # Without a pom to compare against (an install that lost its poms), trust the stamp.
    return pom_sha is None or stamp.get("pom_sha256") == pom_sha


def _pom_sha(name: str) -> str | None:
    try:
        return hashlib.sha256(_pom(name).read_bytes()).hexdigest()
    except (OSError, JvmSetupError):
        return None


def is_resolved(name: str, home: Path | None = None) -> bool:
    """True when the bundle is in the cache, complete and matching its pom."""
    return _stamp_matches(bundle_dir(name, home), _pom_sha(name))


def _jars(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix == ".jar")


def resolve_bundle(
    name: str,
    home: Path | None = None,
    *,
    log: Callable[[str], None] | None = None,
) -> list[Path]:
    """The jar files of bundle ``name``, downloading them on first use.

    Returns absolute paths, sorted. A cached, complete bundle is returned
    without running Maven or touching the network. When it is not, ``log`` is
    told what is fetched, the download's progress (:class:`MavenProgress`) and
    what it came to.
    """
    bundle = _bundle(name)
    home = home or kspark_home()
    final = bundle_dir(name, home)
    pom_sha = _pom_sha(name)
    if _stamp_matches(final, pom_sha):
        return _jars(final)
    java = find_java()
    pom = _pom(name)  # raises a clear error when no pom can be found
    jars_root = home / "jars"
    jars_root.mkdir(parents=True, exist_ok=True)
    with _locked(jars_root / f".lock-{bundle.key}"):
        if _stamp_matches(final, pom_sha):
            return _jars(final)
        mvn = find_maven(home, log=log)
        if log:
            log(f"kspark: fetching {bundle.name} {bundle.version} jars from Maven Central into {final}")
        started = time.monotonic()
        progress = MavenProgress(bundle.name, log)
        with staged_dir(final) as tmp:
            _run_maven(mvn, java, pom, tmp, home / "m2", bundle, progress)
            jars = _jars(tmp)
            if not jars:
                raise ArtifactResolutionError(f"Maven resolved no jars for bundle {bundle.name}")
            size = sum(j.stat().st_size for j in jars)
            seconds = round(time.monotonic() - started, 1)
            stamp = {
                "bundle": bundle.name,
                "version": bundle.version,
                "pom_sha256": pom_sha,
                "jars": [j.name for j in jars],
                "bytes": size,
                "seconds": seconds,
            }
            (tmp / _STAMP).write_text(json.dumps(stamp, indent=2) + "\n")
        if log:
            done = f"{len(jars)} jars, {size / 1e6:.1f} MB in {seconds} s"
            log(f"kspark: {bundle.name}: {done} ({progress.total()})")
    return _jars(final)


class MavenProgress:
    """What Maven downloaded for one bundle, read from its transfer lines.

    :meth:`feed` takes Maven's output a line at a time; a download is told to
    ``log`` as a count, the bytes and the latest file, at most once every
    ``interval`` seconds (the first at once): a cold fetch of the broker's
    bundle is 333 files (its jars and poms, and Maven's dependency plugin with
    its own), a line every couple of seconds rather than hundreds.
    """

    def __init__(
        self,
        bundle: str,
        log: _Log | None,
        *,
        interval: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.bundle = bundle
        self.files = 0
        self.bytes = 0
        self.latest = ""
        self._log = log
        self._interval = interval
        self._clock = clock
        self._told_at: float | None = None

    def feed(self, line: str) -> None:
        """Count ``line`` if it is a finished download, and tell it if it is time to."""
        match = _DOWNLOADED.search(line)
        if match is None:
            return
        self.files += 1
        self.bytes += round(float(match["size"]) * _UNITS[match["unit"]])
        self.latest = match["url"].rsplit("/", 1)[-1]
        now = self._clock()
        if self._log is not None and (self._told_at is None or now - self._told_at >= self._interval):
            self._told_at = now
            self._log(
                f"kspark: {self.bundle}: {self._count()} downloaded ({self.bytes / 1e6:.1f} MB), "
                f"latest {self.latest}"
            )

    def total(self) -> str:
        """The downloads in words, for the line that ends the fetch."""
        if self.files == 0:
            return "Maven downloaded nothing: all of it was in its local repository"
        return f"Maven downloaded {self._count()}, {self.bytes / 1e6:.1f} MB, poms and its plugins included"

    def _count(self) -> str:
        return f"{self.files} file{'' if self.files == 1 else 's'}"


def _run_maven(
    mvn: Path, java: Path, pom: Path, out: Path, repo: Path, bundle: Bundle, progress: MavenProgress
) -> None:
    # Not -q: Maven's transfer lines ("Downloaded from central: ...") are the progress.
    cmd = [
        str(mvn),
        "-B",
        "-U",  # retry artifacts that an earlier failed run cached as missing
        "-f",
        str(pom),
        f"-Dmaven.repo.local={repo}",
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={out}",
    ]
    lines: list[str] = []
    with subprocess.Popen(
        cmd,
        env=_java_env(java),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            progress.feed(line)
    if proc.returncode == 0:
        return
    output = "\n".join(lines)
    # Maven's INFO lines (transfers, the build's steps) come before its errors; the errors say why.
    errors = [line for line in lines if line.startswith("[ERROR]")]
    tail = "\n".join((errors or lines)[-25:])
    coords = ", ".join(bundle.coordinates)
    if any(marker in output for marker in _NETWORK_MARKERS):
        raise ArtifactResolutionError(
            f"could not download the {bundle.name} {bundle.version} bundle ({coords}) "
            f"from Maven Central. The first run needs Maven Central "
            f"({MAVEN_CENTRAL}); later runs use the cache in {repo.parent}. "
            f"Maven said:\n{tail}"
        )
    raise ArtifactResolutionError(
        f"Maven failed (exit {proc.returncode}) resolving the {bundle.name} bundle "
        f"({coords}) with {' '.join(cmd)}:\n{tail}"
    )


def classpath(names: Sequence[str], home: Path | None = None) -> list[Path]:
    """The jars of several bundles, in order, each resolved on first use."""
    out: list[Path] = []
    for n in names:
        out.extend(resolve_bundle(n, home))
    return out


@contextlib.contextmanager
def staged_dir(final: Path) -> Iterator[Path]:
    """A fresh temp dir beside ``final`` that replaces ``final`` whole when the block succeeds.

    A cache entry is either complete or absent: an interrupted or failed
    build removes its temp dir, and a stale ``final`` (built from older
    inputs) goes only once its replacement is complete.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".tmp-{final.name}-"))
    try:
        yield tmp
        if final.exists():
            shutil.rmtree(final)
        os.rename(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def compile_java(name: str, sources: Sequence[Path], bundle: str, home: Path | None = None) -> str:
    """Compile ``sources`` once against a jar bundle; return the classpath that runs them.

    The classes are cached under ``<KSPARK_HOME>/java/<name>/<hash of the sources>`` and
    written atomically (temp dir + rename), so a changed source recompiles and an
    interrupted compile leaves nothing behind. Used by the Java reference harness and
    the Kafka Streams benchmark.
    """
    jars = resolve_bundle(bundle, home=home)
    digest = hashlib.sha256()
    for src in sorted(sources):
        digest.update(src.name.encode())
        digest.update(src.read_bytes())
    out = (home or kspark_home()) / "java" / name / digest.hexdigest()[:16]
    if not (out / ".built").exists():
        with staged_dir(out) as tmp:
            cp = os.pathsep.join(map(str, jars))
            command = [_javac(), "-nowarn", "--release", "17", "-cp", cp, "-d", str(tmp / "classes")]
            proc = subprocess.run([*command, *map(str, sorted(sources))], capture_output=True, text=True)
            if proc.returncode != 0:
                raise JvmSetupError(f"javac failed on {name}:\n{proc.stderr[-4000:]}")
            (tmp / ".built").write_text("ok\n")
    return os.pathsep.join([str(out / "classes"), *map(str, jars)])


def _javac() -> str:
    """The JDK compiler next to the ``java`` kspark uses (or on PATH)."""
    javac = find_java().resolve().parent / "javac"
    if javac.exists():
        return str(javac)
    found = shutil.which("javac")
    if not found:
        raise JavaNotFoundError("compiling Java sources needs a JDK (javac); install openjdk-17-jdk-headless")
    return found
