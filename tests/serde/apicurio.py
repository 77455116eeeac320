"""A real Confluent-compatible Schema Registry for tests: Apicurio Registry 2.4.2.Final.

Confluent's Schema Registry is not on Maven Central (nor on PyPI or npm);
Apicurio Registry is, as an application jar with a Confluent-compatible API
(``/apis/ccompat/v7``). ``jvm/schema-registry/pom.xml`` builds it into a
runnable jar with Quarkus' Maven plugin, once, into
``${KSPARK_HOME:-~/.cache/kspark}/schema-registry/`` (about 130 MB of jars from
Maven Central on the first run); it then starts in about 6 seconds with
in-memory storage, on a free loopback port.

``KSPARK_SCHEMA_REGISTRY_URL`` set to a registry's URL makes the tests use
that registry instead (a Confluent Schema Registry, say).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from kspark.dev.kafka import free_port
from kspark.jvm.jars import find_java, find_maven, kspark_home, staged_dir

__all__ = ["ApicurioRegistry", "SOURCE"]

SOURCE = Path(__file__).resolve().parents[2] / "jvm" / "schema-registry"
VERSION = "2.4.2.Final"
_RUNNER = f"apicurio-registry-local-{VERSION}-runner.jar"
_API = "/apis/ccompat/v7"


def _source_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in SOURCE.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(SOURCE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _die_with_parent() -> None:
    """The registry is SIGKILLed when the test process dies, however it dies (run between fork
    and exec)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def build(log: bool = True) -> Path:
    """The runnable registry jar, built on first use (a copy of jvm/schema-registry, built in place)."""
    home = kspark_home()
    final = home / "schema-registry" / f"apicurio-{VERSION}-{_source_hash()}"
    runner = final / "target" / _RUNNER
    if runner.is_file():
        return runner
    java, mvn = find_java(), find_maven(home)
    if log:
        print(f"building Apicurio Registry {VERSION} from Maven Central into {final} (once)", flush=True)
    with staged_dir(final) as tmp:
        shutil.copytree(SOURCE, tmp, dirs_exist_ok=True)
        env = dict(os.environ, JAVA_HOME=str(java.resolve().parents[1]))
        proc = subprocess.run(
            [
                str(mvn),
                "-q",
                "-B",
                "-f",
                str(tmp / "pom.xml"),
                f"-Dmaven.repo.local={home / 'm2'}",
                "package",
            ],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        if proc.returncode != 0 or not (tmp / "target" / _RUNNER).is_file():
            tail = "\n".join((proc.stdout or "").splitlines()[-30:])
            raise RuntimeError(f"building Apicurio Registry failed (Maven's exit {proc.returncode}):\n{tail}")
    return runner


class ApicurioRegistry:
    """Apicurio Registry on a free loopback port: ``with ApicurioRegistry() as r: r.url``."""

    def __init__(self, startup_timeout_s: float = 60.0) -> None:
        self.port = free_port()
        self.startup_timeout_s = startup_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None
        self.startup_seconds: float | None = None

    @property
    def url(self) -> str:
        """The Confluent-compatible API's base URL: the value of ``schema.registry.url``."""
        return f"http://127.0.0.1:{self.port}{_API}"

    def start(self) -> ApicurioRegistry:
        runner = build()
        self.log_path = runner.parent / f"registry-{self.port}.log"
        started = time.monotonic()
        with open(self.log_path, "wb") as out:
            self._proc = subprocess.Popen(
                [str(find_java()), "-Xmx512m", f"-Dquarkus.http.port={self.port}", "-jar", str(runner)],
                cwd=runner.parent,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,  # only prctl between fork and exec
            )
        deadline = started + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                code = self._proc.returncode
                raise RuntimeError(f"Apicurio Registry exited with {code}; see {self.log_path}")
            try:
                with urllib.request.urlopen(f"{self.url}/subjects", timeout=2) as resp:
                    if resp.status == 200:
                        self.startup_seconds = round(time.monotonic() - started, 1)
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(
            f"Apicurio Registry did not answer within {self.startup_timeout_s} s; see {self.log_path}"
        )

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)

    def __enter__(self) -> ApicurioRegistry:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
