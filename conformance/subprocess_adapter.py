"""The subprocess adapter: replay traces against an implementation in another process.

The implementation under test is a server speaking JSON Lines on its stdin and stdout
(spec/protocol.md): kraftspec sends ``start`` with a trace's configuration, then the trace's
events, and reads one answer per line, in order. Any language will do; the example server
``python -m kraftspec.conformance.examples.impl_server`` puts kraftspec's impl behind it.

``SubprocessAdapter`` follows the Adapter protocol of adapters.py. Told the trace ahead
(``prepare``), it pipelines: it keeps up to ``window`` events written ahead of the answers it has
read, in one write per batch, asking for the committed state only after the steps the replayer
will check. It never blocks: reads and writes go through a selector with the per-step timeout.
Whatever goes wrong with the process (no answer in time, an exit, a line that is not the expected
JSON, an answer out of order, an error it reports) raises ``AdapterFailure`` with a one-line
verdict; the process is then killed with every process it started (its whole tree, even those
that moved to a new session) and reaped. A line longer than ``max_line_bytes`` (16 MiB) is such a
fault, so that kraftspec's memory stays bounded; and the process itself is watched, so that a crash
is reported as a crash even when a process it started keeps its stdout open.

One process serves many traces: ``close()``, which the replayer calls after each trace, only
ends the trace (it reads and drops the answers still due), and the next ``start`` reuses the
process, or launches a new one if the last one failed. ``shutdown()`` (also on leaving a ``with``
block, on garbage collection and at interpreter exit) stops it: ``stop``, then a kill if it does
not exit in time, then a kill of whatever it started that is left, and always a wait, so no zombie
is left.

``adapter_from_spec`` turns the command line's ``--adapter`` value into an adapter: ``model``,
``impl``, or ``subprocess:<shell command>``.

``python -m kraftspec.conformance.subprocess_adapter`` measures the throughput of the adapter
(see ``measure_throughput``).
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import shlex
import signal
import subprocess
import sys
import time
import weakref
from collections import deque
from typing import IO, Any, NoReturn

from kraftspec.spec.profiles import DEFAULT_PROFILE, profile_names

from .adapters import AdapterFailure, ImplAdapter, ModelAdapter
from .trace import LEVELS

PROTOCOL = 1
"""The version of spec/protocol.md this adapter speaks."""

SPEC_PREFIX = "subprocess:"
EXAMPLE_SERVER = shlex.join([sys.executable, "-m", "kraftspec.conformance.examples.impl_server"])
"""impl behind the example server, run by this Python."""

_encode = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
_decode = json.loads
_STDERR_KEPT = 8192  # bytes of the process's stderr kept for verdicts
_QUOTED = 120  # characters of an unexpected line quoted in a verdict
MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line a server may write, in bytes without its newline (spec/protocol.md, Limits): a
line that grows beyond it is a fault, so that kraftspec's memory stays bounded."""


def adapter_from_spec(spec: str) -> ModelAdapter | ImplAdapter | SubprocessAdapter:
    """The adapter an ``--adapter`` value names: ``model``, ``impl``, or ``subprocess:<shell
    command>`` (the command runs under ``/bin/sh -c``, from the current directory; e.g.
    ``subprocess:python -m kraftspec.conformance.examples.impl_server``)."""
    if spec == "model":
        return ModelAdapter()
    if spec == "impl":
        return ImplAdapter()
    if spec == "kafka" or spec.startswith("kafka:"):
        return kafka_adapter(spec)
    if spec.startswith(SPEC_PREFIX):
        command = spec[len(SPEC_PREFIX):].strip()
        if not command:
            raise ValueError(f"adapter {spec!r} names no command; expected subprocess:<shell command>")
        return SubprocessAdapter(command)
    raise ValueError(f"unknown adapter {spec!r}; expected model, impl, kafka[:VERSION] or subprocess:<shell command>")


def kafka_adapter(spec: str) -> SubprocessAdapter:
    """Apache Kafka's controller behind the protocol, for ``kafka`` or ``kafka:<version>``."""
    from kraftspec.conformance import kafka  # builds Apache Kafka's adapter with Maven on first use

    # Kafka answers in milliseconds, but a JVM that starts and builds a controller on a loaded
    # machine can take several seconds; a controller that spins (it happens) is cut off after 20.
    adapter = SubprocessAdapter(kafka.command(spec), timeout=20.0, start_timeout=60.0)
    adapter.spec = spec
    return adapter


_NOT_JSON = object()


def decode_lines(lines: list[bytes]) -> list[tuple[Any, bytes]]:
    """Each line's JSON value (``_NOT_JSON`` if it has none), with the line. The lines are decoded
    as one JSON array when they make one of as many values, which is a third faster than line by
    line (one call, and keys shared across objects); otherwise line by line."""
    try:
        values = _decode(b"[" + b",".join(lines) + b"]")
        if len(values) == len(lines):
            return list(zip(values, lines, strict=True))
    except ValueError:
        pass
    decoded = []
    for line in lines:
        try:
            decoded.append((_decode(line), line))
        except ValueError:
            decoded.append((_NOT_JSON, line))
    return decoded


def describe(event: dict[str, Any]) -> str:
    """A few words for an event in a verdict: ``BrokerHeartbeat request``, ``commit``."""
    kind = event.get("kind")
    return f"{event.get('api')} request" if kind == "request" else str(kind)


def quote(line: bytes) -> str:
    text = line.decode("utf-8", "replace")
    return repr(text[:_QUOTED]) + (f" (and {len(text) - _QUOTED} more characters)" if len(text) > _QUOTED else "")


class LineTooLong(Exception):
    """The server wrote more than its line limit without a newline."""


# ---- owning the server's process tree -------------------------------------------------------------
#
# The server runs in a new session, so a kill of its process group ends what stays in it. A process
# can leave the group (setsid) and, once its parent exits, is re-parented to init, out of reach of
# the parent links. So the server's environment carries a variable (_MARK) with a token unique to
# its launch, which every process it starts inherits whatever session it moves to. Ending the tree
# (`_end_tree`) kills each live process that descends from the server by parent links (which finds a
# descendant that dropped its environment, while its parent lives) or carries the token (which
# finds one that moved away and was orphaned), found by one scan of /proc; it waits for them to die,
# then scans again in case one forked meanwhile. Only a process that both drops its environment and
# loses its parent escapes. Simpler alternatives fall short: PR_SET_CHILD_SUBREAPER would make
# kraftspec the parent of every orphan of every process it runs (Spark's and pytest's too) and leave
# their zombies to it, and a cgroup needs privileges.

_MARK = "KRAFTSPEC_SERVER_TOKEN"
_END_ROUNDS = 20  # scans before giving up on a tree that keeps forking faster than it dies
_DEATH_WAIT = 5.0  # seconds to wait for killed processes to die, in each round


def _tree(root: int | None, mark: bytes) -> set[int]:
    """The live processes (zombies excluded) that descend from ``root``, itself included, or whose
    environment holds ``mark`` (``NAME=token``); empty where there is no /proc. ``root`` must not
    have been reaped (its pid could belong to another process by now): None once it has."""
    children: dict[int, list[int]] = {}
    alive, marked = set(), []
    try:
        names = os.listdir("/proc")
    except OSError:
        return set()
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            if fields[0] in (b"Z", b"X"):  # dead, awaiting its parent's wait
                continue
            pid = int(name)
            alive.add(pid)
            children.setdefault(int(fields[1]), []).append(pid)
            with open(f"/proc/{name}/environ", "rb") as environ:
                if mark in environ.read().split(b"\0"):
                    marked.append(pid)
        except (OSError, IndexError, ValueError):  # gone meanwhile, or another user's
            continue
    found, todo = set(), [*marked] if root is None else [root, *marked]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return (found & alive) - {os.getpid()}


def _running(pid: int) -> bool:
    """Is ``pid`` a process that has not yet died (a zombie has)?"""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def _end_tree(root: int | None, mark: bytes) -> None:
    """SIGKILL the process tree of ``root`` (see above) and wait for it to die."""
    spared: set[int] = set()  # processes that may not be signalled (another user's)
    for _ in range(_END_ROUNDS):
        pids = _tree(root, mark) - spared
        if not pids:
            return
        polled: set[int] = set()  # signalled without a pidfd
        with selectors.DefaultSelector() as dying:
            for pid in pids:
                try:
                    handle = os.pidfd_open(pid)  # a pidfd signals the very process found, and is readable once it dies
                except (OSError, AttributeError):
                    handle = None
                try:
                    if handle is None:
                        os.kill(pid, signal.SIGKILL)
                        polled.add(pid)
                    else:
                        signal.pidfd_send_signal(handle, signal.SIGKILL)
                        dying.register(handle, selectors.EVENT_READ)
                        handle = None
                except PermissionError:
                    spared.add(pid)
                except ProcessLookupError:
                    pass
                finally:
                    if handle is not None:
                        os.close(handle)
            deadline = time.monotonic() + _DEATH_WAIT
            while dying.get_map() and (remaining := deadline - time.monotonic()) > 0:
                for key, _ in dying.select(remaining):
                    dying.unregister(key.fd)
                    os.close(key.fd)
            for key in list(dying.get_map().values()):
                os.close(key.fd)
            # Without pidfds nothing signals a death: poll, backing off, until the signalled
            # processes are gone (a SIGKILL is not instant), so the next scan does not find them
            # still running and count a round.
            pause = 0.001
            while (polled := {pid for pid in polled if _running(pid)}) and time.monotonic() < deadline:
                time.sleep(pause)
                pause = min(pause * 2, 0.05)


class _Server:
    """The process under test and its three pipes, driven through a selector; no reference to the
    adapter, so that a finalizer can stop it."""

    def __init__(self, command: list[str] | str, max_line_bytes: int = MAX_LINE_BYTES):
        token = f"{os.getpid()}-{secrets.token_hex(8)}"
        self.mark = f"{_MARK}={token}".encode()
        self.popen = subprocess.Popen(
            command, shell=isinstance(command, str), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, bufsize=0, start_new_session=True,  # its own process group and session
            env={**os.environ, _MARK: token},  # marks every process it starts (see _end_tree)
        )
        self.pid = self.popen.pid
        self.max_line_bytes = max_line_bytes
        stdin, stdout, stderr = self.popen.stdin, self.popen.stdout, self.popen.stderr
        assert stdin is not None and stdout is not None and stderr is not None  # all three are pipes (PIPE above)
        self.stdin_pipe = stdin
        self.pipes: tuple[IO[bytes], ...] = (stdin, stdout, stderr)
        self.stdin, self.stdout, self.stderr = (p.fileno() for p in self.pipes)
        for fd in (self.stdin, self.stdout, self.stderr):
            os.set_blocking(fd, False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stdout, selectors.EVENT_READ)
        self.selector.register(self.stderr, selectors.EVENT_READ)
        # The process itself is watched, not only its stdout: a process it started may hold the pipe
        # open after it exits. A pidfd becomes readable when it exits; without one, it is polled.
        try:
            self.watch: int | None = os.pidfd_open(self.pid)
            self.selector.register(self.watch, selectors.EVENT_READ)
        except (OSError, AttributeError):
            self.watch = None
        self.pending = bytearray()  # written by us, not yet taken by the pipe
        self.writing = False  # stdin registered for writing
        self.lines: list[bytes] = []  # complete lines read, not yet taken
        self.partial: list[bytes] = []  # the pieces of a line not yet complete
        self.partial_bytes = 0  # their length
        self.received = 0  # lines read in all
        self.stderr_tail = bytearray()
        self.eof = False  # its stdout is closed
        self.exited = False  # the process itself has exited
        self.gone = False  # killed or stopped, and reaped

    # ---- moving bytes ------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        self.pending += data
        self._flush()

    def _flush(self) -> None:
        try:
            while self.pending:
                written = os.write(self.stdin, self.pending)
                del self.pending[:written]
        except BlockingIOError:
            pass
        except (BrokenPipeError, OSError):  # it closed its stdin or exited: its stdout tells the rest
            self.pending.clear()
        want = bool(self.pending)
        if want != self.writing:
            if want:
                self.selector.register(self.stdin, selectors.EVENT_WRITE)
            else:
                self.selector.unregister(self.stdin)
            self.writing = want

    def read_lines(self, deadline: float) -> list[bytes] | None:
        """The lines it wrote (without their newlines) since the last call, at least one; None at the
        end of its stdout or once it has exited and all it wrote is read; raises TimeoutError at
        ``deadline`` (a ``time.monotonic`` value), LineTooLong past the line limit."""
        while not self.lines:
            if self.eof:
                return None
            if self.exited:  # all it wrote is in the pipe: read it without waiting for the pipe's end
                while not self.lines and self._read_stdout():
                    pass
                if self.lines:
                    break
                if self.partial:  # a last line without its newline
                    self._last_line()
                    break
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            for key, _ in self.selector.select(remaining if self.watch is not None else min(remaining, 0.05)):
                fd = key.fd
                if fd == self.stdout:
                    self._read_stdout()
                elif fd == self.stderr:
                    self._read_stderr()
                elif fd == self.watch:
                    self._has_exited()
                else:
                    self._flush()
            if self.watch is None and not self.exited and self.popen.poll() is not None:
                self._has_exited()
        lines, self.lines = self.lines, []
        return lines

    def _has_exited(self) -> None:
        self.exited = True
        if self.watch is not None:
            self.selector.unregister(self.watch)

    def _read_stdout(self) -> bool:
        """Read what its stdout holds (up to a chunk); False if it held nothing, or ended."""
        try:
            chunk = os.read(self.stdout, 1 << 20)
        except BlockingIOError:
            return False
        if not chunk:
            self.eof = True
            self.selector.unregister(self.stdout)
            if self.partial:  # a last line without its newline
                self._last_line()
            return False
        limit = self.max_line_bytes
        if b"\n" not in chunk:
            self.partial.append(chunk)
            self.partial_bytes += len(chunk)
            if self.partial_bytes > limit:  # the bound on kraftspec's memory: never more than a line and a chunk
                raise LineTooLong(limit)
            return True
        # a long line arrives in pieces: they are joined once it is complete
        data = b"".join([*self.partial, chunk]) if self.partial else chunk
        parts = data.split(b"\n")
        rest = parts.pop()
        if len(data) > limit and max(len(rest), *map(len, parts)) > limit:
            raise LineTooLong(limit)
        self.partial, self.partial_bytes = ([rest], len(rest)) if rest else ([], 0)
        self.lines.extend(parts)
        self.received += len(parts)
        return True

    def _last_line(self) -> None:
        self.lines.append(b"".join(self.partial))
        self.received += 1
        self.partial, self.partial_bytes = [], 0

    def _read_stderr(self) -> bool:
        try:
            chunk = os.read(self.stderr, 1 << 16)
        except BlockingIOError:
            return False
        if not chunk:
            self.selector.unregister(self.stderr)
            return False
        self.stderr_tail += chunk
        del self.stderr_tail[:-_STDERR_KEPT]
        return True

    # ---- its end -------------------------------------------------------------------------------

    def stderr_ends(self) -> str:
        """The last lines it wrote to stderr, on one line."""
        lines = [line.strip() for line in self.stderr_tail.decode("utf-8", "replace").splitlines() if line.strip()]
        tail = " | ".join(lines[-5:])
        if len(tail) > 400:
            tail = "..." + tail[-400:]
        return f"its stderr ends: {tail}" if tail else "its stderr is empty"

    def exit_status(self, wait: float) -> str:
        """How it ended, waiting up to ``wait`` seconds for it, and the end of its stderr; kills
        what is left of it."""
        try:
            code = self.popen.wait(0 if self.exited else wait)
        except subprocess.TimeoutExpired:
            how = "closed its stdout but kept running; killed it"
        else:
            how = f"exited with code {code}"
            if code < 0:
                try:
                    how = f"was killed by signal {-code} ({signal.Signals(-code).name})"
                except ValueError:
                    how = f"was killed by signal {-code}"
            if not self.eof:
                how += " (a process it started kept its stdout open; killed it)"
        self.kill()
        return f"{how}; {self.stderr_ends()}"

    def _drain_stderr(self) -> None:
        """Read what its stderr holds now, without waiting (a bounded amount: a process that
        writes on and on does not keep kraftspec here)."""
        if self.stderr in self.selector.get_map():
            for _ in range(64):
                if not self._read_stderr():
                    return

    def kill(self) -> None:
        """Kill its whole process tree (see _end_tree), reap it, keep the last of its stderr, close
        the pipes. Safe to call again."""
        if self.gone:
            return
        self.gone = True
        _end_tree(self.pid if self.popen.returncode is None else None, self.mark)  # its pid is its own until reaped
        try:
            os.killpg(self.pid, signal.SIGKILL)  # whatever is left in its group, were /proc missing
        except (ProcessLookupError, PermissionError):
            pass
        self.popen.kill()  # at least the process itself (a no-op once it has been reaped)
        self.popen.wait()
        self._drain_stderr()
        self._close_pipes()

    def stop(self, timeout: float) -> None:
        """Ask it to stop (``stop``, then the end of its stdin), give it ``timeout`` seconds to exit,
        then kill what is left of its process tree and reap it. Safe to call again."""
        if self.gone:
            return
        deadline = time.monotonic() + timeout
        try:
            self.write(b'{"type":"stop"}\n')
            while self.pending:  # its stdin is full: read its answers so that it takes the rest
                if self.read_lines(deadline) is None:
                    break
            if self.writing:
                self.selector.unregister(self.stdin)
                self.writing = False
            self.stdin_pipe.close()  # the end of its input: a server stops there too
            while self.read_lines(deadline) is not None:  # "stopped", and anything before it, until it exits
                pass
            self.popen.wait(max(0.0, deadline - time.monotonic()))
        except (TimeoutError, subprocess.TimeoutExpired, LineTooLong, OSError):
            pass
        self.kill()  # anything left of its tree; and the reaping

    def _close_pipes(self) -> None:
        self.selector.close()
        if self.watch is not None:
            os.close(self.watch)
            self.watch = None
        for pipe in self.pipes:
            try:
                pipe.close()
            except OSError:
                pass


class SubprocessAdapter:
    """An implementation in another process, over the JSON Lines protocol of spec/protocol.md.

    ``command``: a list is executed as is; a string is run by ``/bin/sh -c``. ``timeout``: the
    seconds the process has to answer each message (``start_timeout`` for the first ``start``
    after a launch, which includes its start-up; default: ``timeout``). ``window``: how many
    events may be written ahead of their answers. ``name``: the name in verdicts (default: the
    one the process gives in ``started``). ``max_line_bytes``: the longest line the process may
    write (default ``MAX_LINE_BYTES``, 16 MiB).
    """

    def __init__(self, command: list[str] | str, timeout: float = 10.0, window: int = 256, name: str | None = None,
                 start_timeout: float | None = None, max_line_bytes: int = MAX_LINE_BYTES):
        if not command:
            raise ValueError("command: empty; expected a command line or a list of arguments")
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if start_timeout is not None and not start_timeout > 0:
            raise ValueError(f"start_timeout must be a positive number of seconds, got {start_timeout!r}")
        if not (isinstance(window, int) and window >= 1):
            raise ValueError(f"window must be an integer of at least 1, got {window!r}")
        if not (isinstance(max_line_bytes, int) and max_line_bytes >= 1):
            raise ValueError(f"max_line_bytes must be an integer of at least 1, got {max_line_bytes!r}")
        self.command = command
        self.max_line_bytes = max_line_bytes
        self.timeout = timeout
        self.start_timeout = start_timeout or timeout
        self.window = window
        self._given_name = name
        self.name = name or f"{SPEC_PREFIX}{command if isinstance(command, str) else shlex.join(command)}"
        self.levels: tuple[str, ...] = LEVELS  # until the process says what it reports (in "started")
        self.profiles: tuple[str, ...] = profile_names()  # until the process says which it implements (in "started")
        self.unsupported: dict[str, list[str]] = {}  # what it declares it does not support (in "started")
        self._server: _Server | None = None
        self._stop_server: weakref.finalize[[float], SubprocessAdapter] | None = None  # the finalizer that stops it
        self._plan: list[tuple[dict[str, Any], bool]] | None = None  # from prepare: each event and its committed flag
        self._sent = 0  # events of this trace written
        self._answered = 0  # answers of this trace read: the n of the next one
        self._committed: list[dict[str, Any]] | None = None
        self._answers: deque[tuple[Any, bytes]] = deque()  # answers read ahead: (the object or _NOT_JSON, its line)
        self._line = b""  # the line of the last answer taken, for verdicts
        self.returncode: int | None = None  # the exit status of the last process shutdown stopped
        self.spec: str | None = None  # the --adapter value it was made for, when adapter_from_spec names it (kafka)

    @property
    def pid(self) -> int | None:
        """The process's id, while it runs."""
        return self._server.pid if self._server is not None and not self._server.gone else None

    # ---- the Adapter protocol ----------------------------------------------------------------

    def start(self, config: dict[str, Any]) -> None:
        self.close()
        timeout = self.timeout
        server = self._server
        if server is None or server.gone:
            server = self._launch()
            timeout = self.start_timeout
        server.write(_encode({"type": "start", "protocol": PROTOCOL, "config": config}).encode() + b"\n")
        answer = self._answer(timeout, "a started object", where="start")
        kind = answer.get("type")
        if kind == "error":
            raise AdapterFailure(f"start: the implementation refused to start: {answer.get('message')}")
        if kind != "started":
            self._fail(f"start: expected a started object, got type {kind!r}: {quote(self._line)}")
        if answer.get("protocol") != PROTOCOL:
            self._fail(f"start: the implementation speaks protocol {answer.get('protocol')!r}; this kraftspec speaks {PROTOCOL}")
        levels = answer.get("levels")
        if not (isinstance(levels, list) and all(isinstance(level, str) for level in levels)
                and "responses" in levels and set(levels) <= set(LEVELS)):
            self._fail(f"start: levels must list some of {', '.join(LEVELS)}, responses among them; got {levels!r}")
        self.levels = tuple(level for level in LEVELS if level in levels)
        unsupported = answer.get("unsupported", {})
        if not (isinstance(unsupported, dict) and set(unsupported) <= {"fields", "requests"}
                and all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in unsupported.values())):
            self._fail(f"start: unsupported must be an object with lists of names under fields and requests; got {unsupported!r}")
        self.unsupported = unsupported
        profiles = answer.get("profiles", [DEFAULT_PROFILE])  # a server that names none implements the default one
        if not (isinstance(profiles, list) and profiles and all(isinstance(p, str) for p in profiles)):
            self._fail(f"start: profiles must list the behaviour profiles it implements, some of "
                       f"{', '.join(profile_names())}; got {profiles!r}")
        self.profiles = tuple(profiles)
        self.name = self._given_name or str(answer.get("name") or self.name)

    def prepare(self, trace, level: str, checks: list[bool]) -> None:
        """Announce the trace about to be stepped through, and for each step whether the committed
        state will be asked for after it; start writing events ahead."""
        if level not in self.levels:
            raise AdapterFailure(f"the implementation reports levels {', '.join(self.levels)}; it cannot be compared at level {level!r}")
        server = self._server
        if server is None or server.gone:
            raise AdapterFailure("the implementation is not running (start it first, or it failed earlier)")
        self._plan = plan = [(step.event, check) for step, check in zip(trace.steps, checks, strict=True)]
        self._write_ahead(server, plan)

    def step(self, event: dict[str, Any]) -> dict[str, Any]:
        server = self._server
        if server is None or server.gone:
            raise AdapterFailure("the implementation is not running (start it first, or it failed earlier)")
        n = self._answered
        plan = self._plan
        self._committed = None
        if plan is not None:
            if n >= len(plan) or (plan[n][0] is not event and plan[n][0] != event):
                raise ValueError(f"step {n}: not the event prepare() announced for it")
            if self._sent - n <= self.window // 2:
                self._write_ahead(server, plan)
        else:  # not told the trace: one event at a time, with the committed state
            server.write(self._event_line(n, event, "state" in self.levels))
            self._sent += 1
        answer = self._answer(self.timeout, "a result object", n, event)
        self._answered = n + 1
        if answer.get("type") != "result" or answer.get("n") != n:
            self._unexpected(n, event, answer)
        if "seq" not in answer or "replies" not in answer:
            missing = " and ".join(key for key in ("seq", "replies") if key not in answer)
            self._fail(f"step {n} ({describe(event)}): the result lacks {missing}: {quote(self._line)}")
        self._committed = answer.get("committed")
        return {"seq": answer["seq"], "records": answer.get("records", []), "replies": answer["replies"]}

    def committed(self) -> list[dict[str, Any]]:
        if self._committed is None:
            n = self._answered - 1
            if self._plan is not None and 0 <= n < len(self._plan) and not self._plan[n][1]:
                raise AdapterFailure(f"step {n}: the committed state was not asked for after this step (see prepare)")
            self._fail(f"step {n}: the result lacks the committed state it was asked for: {quote(self._line)}")
        return self._committed

    def close(self) -> None:
        """End the trace: read and drop the answers still due, so that the process is ready for the
        next start (it is killed if it cannot give them). The process keeps running: see shutdown."""
        server = self._server
        if server is not None and not server.gone:
            try:
                while self._answered < self._sent:
                    self._answer(self.timeout, "a result object", where=f"step {self._answered} (after the trace ended)")
                    self._answered += 1
            except AdapterFailure:
                pass  # it has been killed; the next start launches another
        self._plan, self._sent, self._answered, self._committed = None, 0, 0, None

    # ---- the process ---------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop the process (``stop``, then a kill after ``timeout``) and reap it."""
        self.close()
        if self._stop_server is not None and self._server is not None:  # _launch sets both
            self._stop_server()
            self.returncode = self._server.popen.returncode
        self._server = self._stop_server = None

    def __enter__(self) -> "SubprocessAdapter":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    def _launch(self) -> _Server:
        """A new process (the one before it, if any, stopped): the adapter's from now on."""
        if self._stop_server is not None:
            self._stop_server()  # reaps the failed one
        self._answers.clear()
        try:
            self._server = server = _Server(self.command, self.max_line_bytes)
        except OSError as problem:
            raise AdapterFailure(f"start: cannot launch {self.command!r}: {problem}") from None
        self._stop_server = weakref.finalize(self, server.stop, self.timeout)
        return server

    def _event_line(self, n: int, event: dict[str, Any], committed: bool) -> bytes:
        return b'{"type":"event","n":%d,"committed":%s,"event":%s}\n' % (
            n, b"true" if committed else b"false", _encode(event).encode())

    def _write_ahead(self, server: _Server, plan: list[tuple[dict[str, Any], bool]]) -> None:
        """Write the planned events (``plan``, prepare's) up to ``window`` ahead of the answers read, in one write."""
        start = self._sent
        end = min(len(plan), self._answered + self.window)
        if end > start:
            line = self._event_line
            server.write(b"".join([line(n, plan[n][0], plan[n][1]) for n in range(start, end)]))
            self._sent = end

    def _answer(self, timeout: float, expected: str, n: int | None = None, event: dict | None = None,
                where: str | None = None) -> dict[str, Any]:
        """The next answer, a JSON object (its line kept in ``_line``). AdapterFailure, the process
        killed, if none comes in ``timeout`` seconds, if the process ends, or if the line is not a
        JSON object. ``where``, or step ``n`` and its ``event``, say what it answers."""
        if not self._answers:
            server = self._server
            assert server is not None  # start launched it, and step and close check it is there
            try:
                lines = server.read_lines(time.monotonic() + timeout)
            except TimeoutError:
                server.kill()
                silent = "" if server.received else " (it has not written a single line: does it flush its stdout after each answer?)"
                raise AdapterFailure(f"{where or _step(n, event)}: no answer within {timeout:g} s{silent}; killed the "
                                     f"implementation (pid {server.pid}); {server.stderr_ends()}") from None
            except LineTooLong as too_long:
                server.kill()
                raise AdapterFailure(f"{where or _step(n, event)}: the implementation wrote more than {too_long.args[0]} bytes "
                                     f"without a newline (the limit of a line); killed it (pid {server.pid}); "
                                     f"{server.stderr_ends()}") from None
            if lines is None:
                raise AdapterFailure(f"{where or _step(n, event)}: the implementation {server.exit_status(min(timeout, 2.0))}")
            self._answers.extend(decode_lines(lines))
        answer, self._line = self._answers.popleft()
        if answer is _NOT_JSON:
            self._fail(f"{where or _step(n, event)}: expected {expected}, got a line that is not JSON: {quote(self._line)}")
        if not isinstance(answer, dict):
            self._fail(f"{where or _step(n, event)}: expected {expected}, got {quote(self._line)}")
        return answer

    def _unexpected(self, n: int, event: dict[str, Any], answer: dict[str, Any]) -> NoReturn:
        kind = answer.get("type")
        if kind == "error":  # the process stays: it answers the events already sent, and close reads them
            raise AdapterFailure(f"{_step(n, event)}: the implementation reported an error: {answer.get('message')}")
        if kind == "result":
            self._fail(f"{_step(n, event)}: expected the result of step {n}, got one numbered {answer.get('n')!r} "
                       "(answers must come in order, one per event)")
        self._fail(f"{_step(n, event)}: expected a result object, got type {kind!r}: {quote(self._line)}")

    def _fail(self, verdict: str) -> NoReturn:
        """Kill the process (its answers can no longer be trusted to line up) and raise the verdict."""
        if self._server is not None:
            self._server.kill()
        raise AdapterFailure(verdict)


def _step(n: int | None, event: dict[str, Any] | None) -> str:
    return f"step {n} ({describe(event or {})})"


# ---- throughput ------------------------------------------------------------------------------


def measure_throughput(seeds=range(10), steps: int = 2000, level: str = "records", command: str = EXAMPLE_SERVER,
                       window: int = 256) -> dict[str, Any]:
    """Replay ``walk(seed, steps)`` for each seed through a SubprocessAdapter running ``command``
    (by default impl behind the example server), comparison included, in one process launched
    and started before the clock starts. Returns the events, the wall seconds, events per second,
    and the CPU seconds each side used (kraftspec's side: this process; the server's: from
    /proc, None elsewhere): on a machine shared with other work, events over the larger of the
    two bounds what two free cores would give."""
    from .generate import walk
    from .replay import replay

    traces = [walk(seed, steps) for seed in seeds]
    events = sum(len(trace.steps) for trace in traces)
    with SubprocessAdapter(shlex.split(command), window=window, start_timeout=60.0) as adapter:  # no shell: its pid is the server's
        adapter.start(traces[0].header.config)  # launch and warm up outside the measurement
        adapter.close()
        server_cpu = _cpu_seconds(adapter.pid)
        client_cpu = time.process_time()
        started = time.perf_counter()
        for trace in traces:
            verdict = replay(trace, adapter, level)
            if not verdict.passed:
                raise RuntimeError(f"the server departs from the model, so there is nothing to measure:\n{verdict.report()}")
        seconds = time.perf_counter() - started
        client_cpu = time.process_time() - client_cpu
        after = _cpu_seconds(adapter.pid)
        server_cpu = None if after is None or server_cpu is None else after - server_cpu
    busiest = max(client_cpu, server_cpu or 0.0)
    return {"traces": len(traces), "events": events, "seconds": seconds, "events_per_s": events / seconds,
            "client_cpu_s": client_cpu, "server_cpu_s": server_cpu, "events_per_busiest_cpu_s": events / busiest,
            "level": level, "window": window, "command": command}


def _cpu_seconds(pid: int | None) -> float | None:
    """The CPU time (user and system) process ``pid`` has used, from /proc (Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, TypeError):
        return None


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m kraftspec.conformance.subprocess_adapter",
        description="Measure the subprocess adapter: replay random walks through a server, comparison included.",
    )
    parser.add_argument("--seeds", type=int, default=10, help="how many walks (seeds 0..N-1; default 10)")
    parser.add_argument("--steps", type=int, default=2000, help="events per walk (default 2000)")
    parser.add_argument("--level", choices=LEVELS, default="records", help="comparison level (default records)")
    parser.add_argument("--window", type=int, default=256, help="events written ahead of their answers (default 256)")
    parser.add_argument("--command", default=EXAMPLE_SERVER, help=f"the server (default: {EXAMPLE_SERVER})")
    args = parser.parse_args(argv)
    for option in ("seeds", "steps", "window"):
        if getattr(args, option) < 1:
            parser.error(f"--{option} must be at least 1, got {getattr(args, option)}")
    figures = measure_throughput(range(args.seeds), args.steps, args.level, args.command, args.window)
    server_cpu = "unknown" if figures["server_cpu_s"] is None else f"{figures['server_cpu_s']:.2f} s"
    print(f"{figures['events']} events in {figures['traces']} traces, level {figures['level']}, window {figures['window']}, "
          f"server: {figures['command']}\n"
          f"  wall {figures['seconds']:.2f} s: {figures['events_per_s']:,.0f} events/s\n"
          f"  CPU: kraftspec {figures['client_cpu_s']:.2f} s, server {server_cpu}: "
          f"{figures['events_per_busiest_cpu_s']:,.0f} events per second of the busier side's CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
