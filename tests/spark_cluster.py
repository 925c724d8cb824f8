"""A real Spark standalone cluster for tests: one master and one worker on 127.0.0.1, started from
the installed pyspark package's own ``bin/spark-class`` (the pip package has no start-master.sh).

    with standalone_cluster(cores=2, memory="2g") as url:   # spark://127.0.0.1:PORT
        ...

Each daemon runs in a session of its own (``spark-class`` ends in ``exec``, so the Popen pid is
the JVM and the session's leader; the executors and Python workers the worker starts for an
application stay in the worker's session). Their standard error, where log4j writes, goes through a pipe that a thread
copies line by line to a log file and checks for the readiness lines below; the test blocks on
that with a deadline, never by sleeping. On leaving the block the fixture stops exactly what it
started: SIGTERM to each JVM (worker first), a wait with a timeout, SIGKILL to its process group
if it has not exited; then whatever is left in those two sessions is killed and waited for (on
pidfds, with a deadline). It never looks for processes by name.

The daemons get their own ``SPARK_CONF_DIR`` (INFO logging to stderr, so the readiness lines show
whatever the caller's environment says, and the master's REST submission server off, so that it
does not take the fixed port 6066) and a work directory in a temporary folder.
"""

from __future__ import annotations

import os
import re
import shutil
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

from kraftspec.conformance.spark import log4j_properties

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"

MASTER_READY = re.compile(r"I have been elected leader! New state: ALIVE")
MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
WORKER_READY = re.compile(r"Successfully registered with master (spark://\S+)")

_LOG4J = log4j_properties("info") + "logger.jetty.name = org.sparkproject.jetty\nlogger.jetty.level = warn\n"

_DEFAULTS = """spark.master.rest.enabled false
spark.ui.showConsoleProgress false
"""


class ClusterError(RuntimeError):
    """The cluster did not come up in time, or a daemon exited; the message has the log's tail."""


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    """A port nothing listens on now (the kernel's choice for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Daemon:
    """One JVM started from spark-class, its stderr copied to ``log`` by a reader thread."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], cwd: Path, log: Path,
                 watch: tuple[re.Pattern, ...]):
        self.name = name
        self.log = log
        self.lines: deque[str] = deque(maxlen=60)
        self.matches: dict[re.Pattern, re.Match] = {}
        self.patterns = watch  # the lines wait_for can wait for, looked for from the first line on
        self.changed = threading.Condition()
        self.ended = False
        self.popen = subprocess.Popen(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True,  # its own session: the executors stay in it
        )
        self.pid = self.popen.pid
        self.pgid = self.sid = self.pid  # a new session, whose leader and group it is
        self.reader = threading.Thread(target=self._read, name=f"spark-{name}-log", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        with open(self.log, "w", encoding="utf-8", errors="replace") as out:
            for raw in self.popen.stdout:
                line = raw.decode("utf-8", "replace")
                out.write(line)
                out.flush()
                with self.changed:
                    self.lines.append(line.rstrip("\n"))
                    for pattern in self.patterns:
                        if pattern not in self.matches and (found := pattern.search(line)):
                            self.matches[pattern] = found
                            self.changed.notify_all()
        with self.changed:
            self.ended = True
            self.changed.notify_all()

    def wait_for(self, pattern: re.Pattern, deadline: float) -> re.Match:
        """Block until a line matches ``pattern`` (one of those watched), the daemon's output ends, or the
        deadline (a ``time.monotonic()`` value) passes."""
        with self.changed:
            while pattern not in self.matches:
                left = deadline - time.monotonic()
                if self.ended or left <= 0:
                    why = "exited" if self.ended else "did not get ready in time"
                    try:
                        code = self.popen.wait(5) if self.ended else self.popen.poll()
                    except subprocess.TimeoutExpired:
                        code = None
                    tail = "\n".join(f"    {line}" for line in list(self.lines)[-25:])
                    raise ClusterError(
                        f"the Spark {self.name} (pid {self.pid}) {why}: no line matching {pattern.pattern!r}"
                        + (f" (exit status {code})" if code is not None else "")
                        + f"; the end of its log ({self.log}):\n{tail}"
                    )
                self.changed.wait(left)
            return self.matches[pattern]

    def stop(self, timeout: float) -> None:
        """SIGTERM, wait up to ``timeout``; SIGKILL to the process group if it is still there; and
        then kill whatever else is left in the group (executors, Python workers) and wait for it."""
        if self.popen.poll() is None:
            try:
                self.popen.terminate()
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                _signal_group(self.pgid, signal.SIGKILL)
                self.popen.wait(timeout)
        left = session_members(self.sid)
        for pid in left:
            _kill(pid)
        wait_gone(left, time.monotonic() + timeout)
        self.reader.join(timeout)
        if self.popen.stdout is not None:
            self.popen.stdout.close()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def session_members(sid: int) -> list[int]:
    """The live processes of session ``sid`` (zombies, which are dead and only wait for their
    parent to reap them, left out), read from /proc. A session, not a process group: PySpark's
    worker daemon moves itself and its workers to a group of their own, within the session."""
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:  # it has just exited
            continue
        if int(fields[3]) == sid and fields[0] not in (b"Z", b"X"):
            members.append(int(entry.name))
    return members


def wait_gone(pids: list[int], deadline: float) -> list[int]:
    """Block until every process of ``pids`` has exited or the deadline passes, on a pidfd each
    (readable when the process ends); the ones still running."""
    left = []
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                left.append(pid)
        finally:
            os.close(fd)
    return left


class standalone_cluster:
    """A Spark standalone master and one worker with ``cores`` and ``memory``, on free ports of
    127.0.0.1. ``with standalone_cluster() as url:`` gives the master URL; afterwards ``pids`` and
    ``sids`` name what was started, ``logs`` the log files, ``started_in`` the seconds the start took."""

    def __init__(self, cores: int = 2, memory: str = "2g", timeout: float = 60.0, stop_timeout: float = 20.0):
        self.cores = cores
        self.memory = memory
        self.timeout = timeout
        self.stop_timeout = stop_timeout
        self.daemons: list[Daemon] = []
        self.url: str | None = None
        self.started_in: float | None = None
        self._folder: Path | None = None
        self.logs_kept: dict[str, str] = {}  # each daemon's whole log, read when it was stopped
        self.kept_folder: Path | None = None  # the logs' folder, kept when the start failed

    @property
    def pids(self) -> list[int]:
        return [d.pid for d in self.daemons]

    @property
    def sids(self) -> list[int]:
        return [d.sid for d in self.daemons]

    @property
    def logs(self) -> list[Path]:
        return [d.log for d in self.daemons]

    def _environment(self, folder: Path) -> dict[str, str]:
        conf = folder / "conf"
        conf.mkdir()
        (conf / "log4j2.properties").write_text(_LOG4J)
        (conf / "spark-defaults.conf").write_text(_DEFAULTS)
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_CONF_DIR=str(conf),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_LOCAL_DIRS=str(folder / "local"),
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_DRIVER_PYTHON=sys.executable,
        )
        for name in ("SPARK_MASTER_OPTS", "SPARK_WORKER_OPTS", "SPARK_DAEMON_JAVA_OPTS"):
            env.pop(name, None)
        return env

    def __enter__(self) -> str:
        started = time.monotonic()
        deadline = started + self.timeout
        self._folder = folder = Path(tempfile.mkdtemp(prefix="kraftspec-spark-cluster-"))
        try:
            env = self._environment(folder)
            spark_class = str(spark_home() / "bin" / "spark-class")
            port = free_port()
            master = Daemon("master", [spark_class, MASTER_CLASS, "--host", "127.0.0.1", "--port", str(port),
                                       "--webui-port", str(free_port())], env, folder, folder / "master.log",
                            watch=(MASTER_URL, MASTER_READY))
            self.daemons.append(master)
            url = master.wait_for(MASTER_URL, deadline).group(1)
            master.wait_for(MASTER_READY, deadline)
            work = folder / "work"
            work.mkdir()
            worker = Daemon("worker", [spark_class, WORKER_CLASS, "--host", "127.0.0.1", "--cores", str(self.cores),
                                       "--memory", self.memory, "--webui-port", str(free_port()),
                                       "--work-dir", str(work), url], env, folder, folder / "worker.log",
                            watch=(WORKER_READY,))
            self.daemons.append(worker)
            registered = worker.wait_for(WORKER_READY, deadline).group(1)
            if registered != url:
                raise ClusterError(f"the worker registered with {registered}, not with {url}")
        except BaseException:
            self._stop(keep_folder=True)  # the logs the error names stay for reading
            raise
        self.url = url
        self.started_in = time.monotonic() - started
        return url

    def __exit__(self, *exc) -> None:
        self._stop()

    def _stop(self, keep_folder: bool = False) -> None:
        for daemon in reversed(self.daemons):  # the worker first: it stops its executors
            daemon.stop(self.stop_timeout)
        if self._folder is not None:
            self.logs_kept = {d.name: d.log.read_text(errors="replace") for d in self.daemons if d.log.exists()}
            if keep_folder:
                self.kept_folder = self._folder
            else:
                shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def alive(self) -> list[int]:
        """The processes of this cluster that still run: the daemons and anything in their groups."""
        return sorted(set().union(*(session_members(sid) for sid in self.sids)))
