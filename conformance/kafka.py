"""Apache Kafka's own controller as a system under test.

``--adapter kafka`` (or ``kafka:VERSION``, ``kafka:VERSION:METADATA_VERSION``) runs the Kafka
adapter, a small Java program of kraftspec's (conformance/kafka-adapter/, a Maven module on
Kafka's jars from Maven Central), behind the conformance protocol (spec/protocol.md). The first
use of a Kafka version builds the adapter with Maven into the user's cache folder
(``$XDG_CACHE_HOME/kraftspec/kafka-adapter/``, by default ``~/.cache/...``); later uses start
the cached build. Nothing is written into kraftspec's installation.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

DEFAULT_VERSION = "4.4.0"
"""The Kafka release ``--adapter kafka`` builds against: the newest that resolves (November 2026)."""

DEFAULT_VERSIONS = ("4.0.0", "4.1.0", "4.2.0", "4.3.0", "4.4.0")
"""For the version matrix: every minor release from the oldest 4.x to the newest that resolves."""

DEFAULT_METADATA_VERSION = "3.7-IV1"
"""The metadata.version the adapter's controller runs at: the newest without directory
assignment (KIP-858), so that brokers register without log directories, as in the KIP."""

MAIN_CLASS = "dev.kraftspec.kafka.Main"
SOURCES = Path(__file__).resolve().parent / "kafka-adapter"
_VERSION_TEXT = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")
_METADATA_VERSION_TEXT = re.compile(r"^[0-9]+\.[0-9]+-IV[0-9]+$")


class KafkaAdapterError(ValueError):
    """The Kafka adapter cannot be built or started; the message says why and what to do."""


def parse_spec(spec: str) -> tuple[str, str]:
    """``kafka``, ``kafka:4.1.0`` or ``kafka:4.1.0:3.7-IV1`` -> (Kafka version, metadata.version)."""
    parts = spec.split(":")
    if parts[0] != "kafka" or len(parts) > 3:
        raise KafkaAdapterError(f"adapter {spec!r}: expected kafka, kafka:VERSION or kafka:VERSION:METADATA_VERSION")
    version = parts[1] if len(parts) > 1 and parts[1] else DEFAULT_VERSION
    metadata_version = parts[2] if len(parts) > 2 and parts[2] else DEFAULT_METADATA_VERSION
    if not _VERSION_TEXT.match(version):
        raise KafkaAdapterError(f"adapter {spec!r}: Kafka version {version!r} is not of the form 4.1.0")
    if not _METADATA_VERSION_TEXT.match(metadata_version):
        raise KafkaAdapterError(
            f"adapter {spec!r}: metadata.version {metadata_version!r} is not of the form 3.7-IV1")
    return version, metadata_version


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kraftspec" / "kafka-adapter"


def sources_digest() -> str:
    """A digest of the adapter's sources: a changed adapter is built again."""
    digest = hashlib.sha256()
    for path in sorted(p for p in SOURCES.rglob("*") if p.is_file() and "target" not in p.parts):
        digest.update(str(path.relative_to(SOURCES)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def schemas_dir() -> Path:
    return Path(str(resources.files("kraftspec.spec.schemas"))) / "rpcs"


def command(spec: str = "kafka") -> list[str]:
    """The command that starts the Kafka adapter ``spec`` names, building it first if need be."""
    version, metadata_version = parse_spec(spec)
    java = shutil.which("java")
    if java is None:
        raise KafkaAdapterError("the Kafka adapter needs Java 17 or newer, and `java` was not found on PATH")
    classpath = build(version)
    return [java, "-Xss4m", "-cp", classpath, MAIN_CLASS, "--schemas", str(schemas_dir()),
            "--metadata-version", metadata_version]


def build(version: str) -> str:
    """The adapter's class path for Kafka ``version``, from the cache or built now with Maven."""
    if not SOURCES.joinpath("pom.xml").is_file():
        raise KafkaAdapterError(f"the Kafka adapter's sources are missing from this installation ({SOURCES})")
    target = cache_root() / f"{version}-{sources_digest()}"
    ready = target / "classpath.txt"
    if _usable(ready):
        return ready.read_text().strip()
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time, across Spark's Python workers too
        if _usable(ready):
            return ready.read_text().strip()
        _maven_build(version, target)
    return ready.read_text().strip()


def _usable(classpath_file: Path) -> bool:
    """A cached build whose jars are all still there (Maven's local repository may have been cleaned)."""
    if not classpath_file.is_file():
        return False
    return all(Path(entry).is_file() for entry in classpath_file.read_text().strip().split(os.pathsep))


def _maven_build(version: str, target: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaAdapterError(
            "building the Kafka adapter needs Maven (`mvn`), which was not found on PATH; "
            "install it (for example: apt-get install maven) and try again")
    work = Path(tempfile.mkdtemp(prefix=f"build-{version}-", dir=target.parent))
    try:
        shutil.copytree(SOURCES, work / "src-tree", ignore=shutil.ignore_patterns("target"))
        result = subprocess.run(
            [mvn, "-q", "-B", "-f", str(work / "src-tree" / "pom.xml"), f"-Dkafka.version={version}", "package"],
            capture_output=True, text=True, check=False)
        if result.returncode != 0:
            output = (result.stdout + result.stderr).strip()
            if f"kafka-metadata:jar:{version}" in output or "Could not resolve dependencies" in output:
                raise KafkaAdapterError(
                    f"Kafka {version} does not resolve from Maven Central (org.apache.kafka:kafka-metadata:{version}); "
                    f"name a released version, for example {DEFAULT_VERSION}")
            tail = "\n".join(output.splitlines()[-15:])
            raise KafkaAdapterError(f"building the Kafka adapter for Kafka {version} failed:\n{tail}")
        built = work / "src-tree" / "target"
        jar = next(built.glob("kraftspec-kafka-adapter-*.jar"))
        staged = work / "out"
        staged.mkdir()
        shutil.copy2(jar, staged / "adapter.jar")
        classpath = f"{target / 'adapter.jar'}{os.pathsep}{(built / 'classpath.txt').read_text().strip()}"
        (staged / "classpath.txt").write_text(classpath + "\n")
        if target.exists():
            shutil.rmtree(target)
        staged.rename(target)
        for stale in target.parent.glob(f"{version}-*"):  # builds of older adapter sources
            if stale != target and not stale.name.startswith("build-"):
                shutil.rmtree(stale, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
