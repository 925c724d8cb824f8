"""A real Apache Kafka node, for tests that read the metadata log Kafka itself writes.

The node is Kafka's own server (``kafka.Kafka``, from the ``kafka_2.13`` jar on Maven Central) in
KRaft mode, started as a subprocess on loopback ports, its data in a folder the caller gives.
conformance/kafka-cluster/ holds the Maven module that resolves its class path, and a small
driver (Kafka's Admin client) that waits for brokers and runs the operator's operations. The
build goes to the user's cache folder (``$XDG_CACHE_HOME/kraftspec/kafka-cluster/``), as the Kafka
adapter's does (conformance/kafka.py); nothing is written into kraftspec's installation.

Every :class:`KafkaNode` stops only the process it started: :meth:`KafkaNode.stop` sends it
SIGTERM and waits for it to exit (Kafka's controlled shutdown), and kills it only if it outlives
the deadline.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

KAFKA_VERSION = "4.4.0"
"""The Kafka release the node runs (kafka_2.13 on Maven Central)."""

METADATA_VERSION = "3.7-IV1"
"""The metadata.version the cluster is formatted at: the kafka profile's (DEC-23), whose records
kraftspec's schemas describe (spec/schemas/kafka-records/)."""

SOURCES = Path(__file__).resolve().parent / "kafka-cluster"
DRIVER_CLASS = "dev.kraftspec.cluster.Driver"
JVM_OPTIONS = ["-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]


class KafkaClusterError(RuntimeError):
    """The node could not be built, formatted, started, driven or stopped; the message says which."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kraftspec" / "kafka-cluster"


def _digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in SOURCES.rglob("*") if p.is_file() and "target" not in p.parts):
        digest.update(str(path.relative_to(SOURCES)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def classpath(version: str = KAFKA_VERSION) -> str:
    """The class path of Kafka ``version``'s server and the driver, from the cache or built now."""
    java, mvn = shutil.which("java"), shutil.which("mvn")
    if java is None:
        raise KafkaClusterError("a Kafka node needs Java 17 or newer, and `java` was not found on PATH")
    target = cache_root() / f"{version}-{_digest()}"
    ready = target / "classpath.txt"
    if _usable(ready):
        return ready.read_text().strip()
    if mvn is None:
        raise KafkaClusterError("building the Kafka node's class path needs Maven (`mvn`), which was not found on PATH")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _usable(ready):
            _build(mvn, version, target)
    return ready.read_text().strip()


def _usable(ready: Path) -> bool:
    return ready.is_file() and all(Path(p).is_file() for p in ready.read_text().strip().split(os.pathsep))


def _build(mvn: str, version: str, target: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix=f"build-{version}-", dir=target.parent))
    try:
        shutil.copytree(SOURCES, work / "src", ignore=shutil.ignore_patterns("target"))
        result = subprocess.run([mvn, "-q", "-B", "-f", str(work / "src" / "pom.xml"), f"-Dkafka.version={version}", "package"],
                                capture_output=True, text=True, check=False)
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
            raise KafkaClusterError(f"building the Kafka node for Kafka {version} failed:\n{tail}")
        built = work / "src" / "target"
        staged = work / "out"
        staged.mkdir()
        shutil.copy2(next(built.glob("kraftspec-kafka-cluster-*.jar")), staged / "driver.jar")
        (staged / "classpath.txt").write_text(f"{target / 'driver.jar'}{os.pathsep}{(built / 'classpath.txt').read_text().strip()}\n")
        if target.exists():
            shutil.rmtree(target)
        staged.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class KafkaNode:
    """One Kafka process: ``roles`` ``broker,controller`` (combined) or ``broker`` (which joins the
    controller at ``controller_port``). Its data lives under ``home``."""

    def __init__(self, home: Path, node_id: int, cluster_id: str, controller_port: int, roles: str = "broker,controller",
                 cp: str | None = None):
        self.home = home
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.roles = roles
        self.controller_port = controller_port
        self.port = free_port()
        self.cp = cp if cp is not None else classpath()
        self.log_dir = home / f"node-{node_id}" / "data"
        self.config = home / f"node-{node_id}" / "server.properties"
        self.output = home / f"node-{node_id}" / "server.out"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def metadata_dir(self) -> Path:
        """The directory of Kafka's metadata log, ``__cluster_metadata-0``."""
        return self.log_dir / "__cluster_metadata-0"

    def write_config(self) -> None:
        listeners = f"PLAINTEXT://127.0.0.1:{self.port}"
        if "controller" in self.roles:
            listeners += f",CONTROLLER://127.0.0.1:{self.controller_port}"
        settings = {
            "process.roles": self.roles,
            "node.id": str(self.node_id),
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "listeners": listeners,
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            "controlled.shutdown.enable": "true",
            "log.flush.interval.messages": "1",
            "metadata.log.max.snapshot.interval.ms": "1000",
        }
        self.config.parent.mkdir(parents=True, exist_ok=True)
        self.config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))

    def _java(self, main: str, *args: str) -> list[str]:
        java = shutil.which("java")
        assert java is not None
        return [java, *JVM_OPTIONS, "-cp", self.cp, main, *args]

    def format(self) -> None:
        """Kafka's storage tool formats the log directory at :data:`METADATA_VERSION`."""
        self.write_config()
        result = subprocess.run(
            self._java("kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(self.config),
                       "--release-version", METADATA_VERSION),
            capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            raise KafkaClusterError(f"formatting node {self.node_id} failed: {(result.stdout + result.stderr).strip()[-2000:]}")

    def start(self) -> None:
        """Start the process; :meth:`drive` with ``wait-brokers`` waits for it to be ready."""
        if self.process is not None and self.process.poll() is None:
            raise KafkaClusterError(f"node {self.node_id} is already running")
        with open(self.output, "ab") as out:
            self.process = subprocess.Popen(self._java("kafka.Kafka", str(self.config)), stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM the process this node started, and wait for it to exit; SIGKILL it after
        ``timeout`` seconds. Returns its exit status (None if it was not running)."""
        process, self.process = self.process, None
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                return process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
                raise KafkaClusterError(f"node {self.node_id} did not stop within {timeout:.0f} s of SIGTERM; killed it") from None
        return process.returncode

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def drive(self, *operations: str, timeout: float = 120.0) -> str:
        """Run the driver's ``operations`` against this node (Driver.java lists them); its output."""
        result = subprocess.run(self._java(DRIVER_CLASS, self.bootstrap, *operations), capture_output=True, text=True,
                                timeout=timeout, check=False)
        if result.returncode != 0:
            tail = self.output.read_text(errors="replace").splitlines()[-20:] if self.output.exists() else []
            raise KafkaClusterError(f"{' '.join(operations)}: {result.stderr.strip()}\nlast lines of node {self.node_id}'s output:\n"
                                    + "\n".join(tail))
        return result.stdout


__all__ = ["KAFKA_VERSION", "METADATA_VERSION", "KafkaClusterError", "KafkaNode", "classpath", "free_port"]
