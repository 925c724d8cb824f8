"""The subprocess adapter and the protocol of spec/protocol.md (conformance/subprocess_adapter.py).

impl behind the example server (conformance/examples/impl_server.py) replays generated walks at
every level, in one process; a changed reply is found; every way a server can fail (hang, crash,
garbage, an error, answers out of order, a banner on stdout, a missing command, a line without end,
a crash while a child holds its stdout) ends in a one-line verdict within about the time limit; no
process of the server's tree (even one in another session) or zombie is left behind. The time
limits are small so that the run can never hang.
"""

import gc
import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest

from kraftspec.conformance.adapters import AdapterFailure, ImplAdapter, ModelAdapter
from kraftspec.conformance.generate import walk
from kraftspec.conformance.replay import replay
from kraftspec.conformance.subprocess_adapter import MAX_LINE_BYTES, SubprocessAdapter, adapter_from_spec

SERVER = [sys.executable, "-m", "kraftspec.conformance.examples.impl_server"]
LAUNCH = 60.0  # seconds a server may take to launch on a busy machine; answers get far less
HANG_SECONDS = 3600  # how long the example server sleeps when told to hang (impl_server --hang-at)
CONFIG = walk(0, 1).header.config


def assert_gone(pid: int) -> None:
    """No process is left in the server's process group, running or zombie."""
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


@pytest.fixture
def server():
    """Make adapters on the example server (with fault options); each is shut down after the test
    and its process group checked empty."""
    made = []

    def make(*options: str, timeout: float = 5.0, **kwargs) -> SubprocessAdapter:
        adapter = SubprocessAdapter(SERVER + list(options), timeout=timeout, start_timeout=LAUNCH, **kwargs)
        made.append(adapter)
        return adapter

    yield make
    for adapter in made:
        pid = adapter.pid
        adapter.shutdown()
        if pid is not None:
            assert_gone(pid)


def launched(adapter: SubprocessAdapter) -> SubprocessAdapter:
    """The adapter with its process launched and started, so that what follows is timed alone."""
    adapter.start(CONFIG)
    adapter.close()
    return adapter


def test_impl_behind_the_example_server_replays_generated_walks_at_every_level_in_one_process(server):
    adapter = server()
    pids = set()
    for seed in range(6):
        trace = walk(seed, 150)
        for level in ("responses", "state", "records"):
            verdict = replay(trace, adapter, level)
            assert verdict.passed, verdict.report()
            assert verdict.steps == 150 and verdict.adapter == "kraftspec impl (example server)"
            pids.add(adapter.pid)
    assert len(pids) == 1 and None not in pids


@pytest.mark.parametrize("window", [1, 7, 100_000], ids=["window-1", "window-7", "window-beyond-the-pipes"])
def test_any_window_gives_the_same_verdicts_and_never_deadlocks_on_full_pipes(server, window):
    """With a window larger than a trace, every event is written before the first answer is read:
    about 400 kB each way, far more than a pipe holds."""
    adapter = server(window=window)
    trace = walk(3, 2000)
    verdict = replay(trace, adapter, "records")
    assert verdict.passed, verdict.report()


def test_without_prepare_it_steps_one_event_at_a_time_and_reports_the_committed_state_each_time(server):
    adapter = server()
    trace = walk(5, 120)
    reference = ImplAdapter()
    reference.start(trace.header.config)
    adapter.start(trace.header.config)
    for step in trace.steps:
        assert adapter.step(step.event) == reference.step(step.event)
        assert adapter.committed() == reference.committed()
    adapter.close()


def test_a_changed_reply_is_found_and_the_process_serves_the_next_trace(server):
    adapter = server("--alter-reply-at", "10")
    trace = walk(2, 200)
    verdict = replay(trace, adapter, "responses")
    assert not verdict.passed
    assert verdict.divergence.part == "replies" and verdict.divergence.step >= 10
    pid = adapter.pid
    assert pid is not None  # a divergence is not a failure of the process: the answers sent ahead were read and dropped
    again = replay(trace, adapter, "records")  # the next trace, in the same process, is answered afresh
    assert not again.passed and again.divergence.part == "replies"
    assert again.divergence.step == verdict.divergence.step  # the fault acts once in every trace
    assert adapter.pid == pid


def test_a_server_that_hangs_is_killed_at_the_time_limit_with_the_step_in_the_verdict(server):
    adapter = launched(server("--hang-at", "5", timeout=0.5))
    pid = adapter.pid
    began = time.monotonic()
    verdict = replay(walk(1, 50), adapter, "records")
    elapsed = time.monotonic() - began
    assert not verdict.passed and verdict.divergence.part == "adapter" and verdict.divergence.step == 5
    assert "step 5 (" in verdict.divergence.actual and "no answer within 0.5 s" in verdict.divergence.actual
    # not given up before the limit, and not waited out: the server sleeps an hour at step 5, so
    # any return well within that hour means it was killed at the limit (a bound no load can reach)
    assert 0.5 <= elapsed < HANG_SECONDS / 10
    assert_gone(pid)


def test_a_server_that_crashes_is_reported_with_its_exit_code_and_the_end_of_its_stderr(server):
    adapter = launched(server("--crash-at", "4", timeout=LAUNCH))
    pid = adapter.pid
    began = time.monotonic()
    verdict = replay(walk(1, 50), adapter, "records")
    # the crash is seen when it happens, not when the answer's time limit (a minute here) runs out
    assert time.monotonic() - began < LAUNCH / 2
    message = verdict.divergence.actual
    assert verdict.divergence.step == 4 and "step 4 (" in message
    assert "exited with code 3" in message and "crashing at event 4, as --crash-at asks" in message
    assert "\n" not in message
    assert_gone(pid)
    assert replay(walk(9, 3), adapter, "records").passed  # the next trace launches a new process
    assert adapter.pid != pid


def test_a_line_that_is_not_json_is_quoted_in_the_verdict(server):
    adapter = launched(server("--garbage-at", "3"))
    pid = adapter.pid
    verdict = replay(walk(1, 50), adapter, "records")
    message = verdict.divergence.actual
    assert verdict.divergence.step == 3
    assert "expected a result object, got a line that is not JSON: 'this is not JSON'" in message
    assert_gone(pid)


def test_an_answer_out_of_order_is_refused(server):
    adapter = launched(server("--misnumber-at", "2"))
    verdict = replay(walk(1, 50), adapter, "responses")
    assert verdict.divergence.step == 2
    assert "expected the result of step 2, got one numbered 3" in verdict.divergence.actual
    assert "answers must come in order" in verdict.divergence.actual


def test_an_error_the_server_reports_ends_the_trace_and_the_process_serves_the_next_one(server):
    adapter = launched(server("--error-at", "6"))
    pid = adapter.pid
    verdict = replay(walk(1, 50), adapter, "records")
    assert verdict.divergence.step == 6
    assert "reported an error: simulated failure (--error-at)" in verdict.divergence.actual
    assert replay(walk(4, 6), adapter, "records").passed  # events 0 to 5 only
    assert adapter.pid == pid


def test_a_banner_on_stdout_is_quoted_and_what_was_expected_is_named():
    banner = SubprocessAdapter([sys.executable, "-c", "print('Welcome to my controller'); import time; time.sleep(60)"],
                               timeout=5.0, start_timeout=LAUNCH)
    with pytest.raises(AdapterFailure) as caught:
        banner.start(CONFIG)
    assert str(caught.value) == "start: expected a started object, got a line that is not JSON: 'Welcome to my controller'"
    assert banner.pid is None
    banner.shutdown()


def test_a_command_that_does_not_exist_is_reported_with_the_shells_words():
    adapter = adapter_from_spec("subprocess:/nonexistent/kraft-server --port 0")
    with pytest.raises(AdapterFailure) as caught:
        adapter.start(CONFIG)
    message = str(caught.value)
    assert message.startswith("start: the implementation exited with code 127") and "/nonexistent/kraft-server" in message
    adapter.shutdown()


def test_a_server_that_reports_fewer_levels_is_not_compared_at_a_higher_one(tmp_path):
    script = tmp_path / "responses_only.py"
    script.write_text(
        "import sys\n"
        "for line in sys.stdin:\n"
        "    print('{\"type\":\"started\",\"protocol\":1,\"name\":\"terse\",\"levels\":[\"responses\"]}', flush=True)\n"
    )
    with SubprocessAdapter([sys.executable, str(script)], timeout=5.0, start_timeout=LAUNCH) as adapter:
        verdict = replay(walk(1, 5), adapter, "state")  # reported as not supported, nothing compared
        assert not verdict.passed and verdict.divergence is None and verdict.steps == 0
        assert verdict.not_supported == "level state (it reports responses)"
        assert adapter.levels == ("responses",) and adapter.name == "terse"
        with pytest.raises(AdapterFailure, match="reports levels responses; it cannot be compared at level 'state'"):
            adapter.prepare(walk(1, 5), "state", [False] * 5)  # the adapter itself still refuses


def test_a_server_chatty_on_stderr_does_not_block(tmp_path):
    """Its stderr is read while kraftspec waits, so a server that logs a lot never stalls on a full pipe."""
    script = tmp_path / "chatty.py"
    script.write_text(
        "import sys\n"
        "sys.stderr.write('log line\\n' * 200_000)\n"  # 1.8 MB before its first answer
        "from kraftspec.conformance.examples.impl_server import main\n"
        "raise SystemExit(main())\n"
    )
    with SubprocessAdapter([sys.executable, str(script)], timeout=5.0, start_timeout=LAUNCH) as adapter:
        assert replay(walk(6, 100), adapter, "records").passed


def test_the_command_line_form_runs_under_a_shell_and_leaves_nothing_behind():
    adapter = adapter_from_spec("subprocess:" + shlex.join(SERVER) + " 2>/dev/null")
    assert isinstance(adapter, SubprocessAdapter)
    assert replay(walk(8, 100), adapter, "records").passed
    pid = adapter.pid
    adapter.shutdown()
    assert adapter.returncode == 0  # it answered stop with stopped, and exited with 0
    assert_gone(pid)


def test_an_adapter_dropped_without_shutdown_stops_its_process():
    adapter = launched(SubprocessAdapter(SERVER, timeout=5.0, start_timeout=LAUNCH))
    pid = adapter.pid
    del adapter
    gc.collect()
    assert_gone(pid)


def test_the_example_server_answers_every_line_in_order_errors_included_and_exits_0_on_stop():
    lines = [
        {"type": "start", "protocol": 1, "config": CONFIG},
        "not JSON",
        {"type": "teleport"},
        {"type": "start", "protocol": 9, "config": CONFIG},
        {"type": "event", "n": 0, "committed": True, "event": {"kind": "tick", "now_ms": 10}},
        {"type": "event", "n": 1, "committed": False, "event": {"kind": "request", "api": "Teleport", "version": 0, "body": {}}},
        {"type": "stop"},
        {"type": "event", "n": 2, "committed": False, "event": {"kind": "tick", "now_ms": 20}},  # after stop: not read
    ]
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    done = subprocess.run(SERVER, input=text.encode(), capture_output=True, timeout=LAUNCH)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0
    assert [a["type"] for a in answers] == ["started", "error", "error", "error", "result", "error", "stopped"]
    assert answers[0]["levels"] == ["responses", "state", "records"] and answers[0]["protocol"] == 1
    assert "protocol 1, not 9" in answers[3]["message"] and "unknown message type 'teleport'" in answers[2]["message"]
    assert answers[4] == {"type": "result", "n": 0, "seq": None, "records": [], "replies": [], "committed": [
        {"type": "FeatureLevelRecord", "data": {"Name": "metadata.format", "MinFeatureLevel": 1, "MaxFeatureLevel": 1}}]}
    assert answers[5]["n"] == 1  # a request it cannot build is answered with an error naming the event


def test_adapter_specs_name_the_model_impl_or_a_command_and_anything_else_is_refused_by_name():
    assert isinstance(adapter_from_spec("model"), ModelAdapter)
    assert isinstance(adapter_from_spec("impl"), ImplAdapter)
    adapter = adapter_from_spec("subprocess:./my-server --flag")
    assert isinstance(adapter, SubprocessAdapter) and adapter.command == "./my-server --flag"
    with pytest.raises(ValueError, match=r"unknown adapter 'zookeeper'; expected model, impl, kafka\[:VERSION\] or "
                                         "subprocess:<shell command>"):
        adapter_from_spec("zookeeper")
    with pytest.raises(ValueError, match="names no command"):
        adapter_from_spec("subprocess:  ")


@pytest.mark.parametrize("option, value, message", [
    ("timeout", 0, "timeout must be a positive number of seconds, got 0"),
    ("max_line_bytes", 0, "max_line_bytes must be an integer of at least 1, got 0"),
    ("window", 0, "window must be an integer of at least 1, got 0"),
    ("start_timeout", -1, "start_timeout must be a positive number of seconds, got -1"),
])
def test_bad_options_are_refused_naming_option_and_value(option, value, message):
    with pytest.raises(ValueError, match=message):
        SubprocessAdapter(SERVER, **{option: value})


def test_a_server_that_never_flushes_gets_a_timeout_that_says_so(tmp_path):
    script = tmp_path / "buffered.py"
    script.write_text(
        "import sys, time\n"
        "out = open(1, 'w', buffering=1 << 20)\n"  # a large buffer, never flushed
        "for line in sys.stdin:\n"
        "    out.write('{\"type\":\"started\",\"protocol\":1,\"name\":\"b\",\"levels\":[\"responses\"]}\\n')\n"
    )
    adapter = SubprocessAdapter([sys.executable, str(script)], timeout=0.5, start_timeout=1.5)
    began = time.monotonic()
    with pytest.raises(AdapterFailure) as caught:
        adapter.start(CONFIG)
    assert time.monotonic() - began < HANG_SECONDS / 10  # the script would wait for its input forever
    assert str(caught.value).startswith("start: no answer within 1.5 s (it has not written a single line: does it flush")
    adapter.shutdown()


def test_a_long_answer_arriving_in_pieces_is_read_whole(tmp_path):
    """A line of several megabytes reaches kraftspec in many reads; it is joined once, and decoded."""
    script = tmp_path / "long.py"
    script.write_text(
        "import sys\n"
        "for line in sys.stdin:\n"
        "    name = 'x' * 5_000_000\n"
        "    sys.stdout.write('{\"type\":\"started\",\"protocol\":1,\"name\":\"' + name + '\",\"levels\":[\"responses\"]}\\n')\n"
        "    sys.stdout.flush()\n"
    )
    with SubprocessAdapter([sys.executable, str(script)], timeout=5.0, start_timeout=LAUNCH) as adapter:
        adapter.start(CONFIG)
        assert adapter.name == "x" * 5_000_000


# ---- behaviour profiles: the header's profile goes to the server, which lists what it implements ---------


def kafka_walk(seed: int, steps: int):
    from kraftspec.model import Config

    return walk(seed, steps, config=Config.for_profile("kafka"))


def test_the_example_server_lists_every_profile_and_is_given_each_traces_profile(server):
    adapter = server()
    for trace in (walk(4, 60), kafka_walk(4, 60)):
        verdict = replay(trace, adapter, "responses")
        assert verdict.not_supported is None and verdict.steps > 0
        assert adapter.profiles == ("kip-631", "kafka")


def test_a_trace_of_a_profile_the_server_does_not_list_is_not_supported_and_not_replayed(server):
    adapter = server("--profiles", "kip-631")
    verdict = replay(kafka_walk(2, 30), adapter, "records")
    assert not verdict.passed and verdict.divergence is None and verdict.steps == 0
    assert verdict.not_supported == "profile kafka (it implements kip-631)"
    assert verdict.report().startswith("NOT SUPPORTED ")
    assert replay(walk(2, 30), adapter, "records").passed  # the same process serves a trace of its profile


def test_a_server_that_lists_no_profiles_implements_kip_631_and_gets_the_header_profile_in_start(tmp_path):
    """The config of start is the header's, profile included: this server names itself after it."""
    script = tmp_path / "before_profiles.py"
    script.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if m['type'] == 'start':\n"
        "        a = {'type': 'started', 'protocol': 1, 'name': m['config']['profile'], 'levels': ['responses']}\n"
        "    elif m['type'] == 'event':\n"
        "        a = {'type': 'error', 'n': m['n'], 'message': 'no controller here'}\n"
        "    else:\n"
        "        a = {'type': 'stopped'}\n"
        "    print(json.dumps(a), flush=True)\n"
    )
    with SubprocessAdapter([sys.executable, str(script)], timeout=5.0, start_timeout=LAUNCH) as adapter:
        verdict = replay(kafka_walk(1, 10), adapter, "responses")
        assert adapter.name == "kafka" and adapter.profiles == ("kip-631",)
        assert verdict.not_supported == "profile kafka (it implements kip-631)" and verdict.steps == 0
        verdict = replay(walk(1, 10), adapter, "responses")  # kip-631: replayed (and failed by the errors)
        assert adapter.name == "kip-631" and verdict.divergence.part == "adapter"


def test_a_malformed_profiles_list_is_a_fault_of_the_server(tmp_path):
    script = tmp_path / "bad_profiles.py"
    script.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    a = {'type': 'started', 'protocol': 1, 'name': 'x', 'levels': ['responses'], 'profiles': 'kafka'}\n"
        "    print(json.dumps(a), flush=True)\n"
    )
    with SubprocessAdapter([sys.executable, str(script)], timeout=5.0, start_timeout=LAUNCH) as adapter:
        with pytest.raises(AdapterFailure, match="profiles must list the behaviour profiles it implements"):
            adapter.start(CONFIG)


# ---- bounded, owned, honest: the line limit and the server's whole process tree ---------------------

STARTED = '{"type":"started","protocol":1,"name":"fake","levels":["responses"]}'


def fake_server(tmp_path, name: str, body: str) -> list[str]:
    """The command of a fake server: ``body`` after a preamble that gives it ``PIDS`` (a file for the
    pids of its processes, written before its first answer, so that the test waits on readiness,
    never on time) and ``answer(text)``."""
    script = tmp_path / f"{name}.py"
    script.write_text(
        "import json, os, signal, sys\n"
        "PIDS = sys.argv[1]\n"
        "def answer(text):\n"
        "    sys.stdout.write(text + '\\n')\n"
        "    sys.stdout.flush()\n"
        + body
    )
    return [sys.executable, str(script), str(tmp_path / f"{name}.pids")]


def alive(pid: int) -> bool:
    """Is ``pid`` a running process (a zombie is dead: it only waits for its parent's wait)?"""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


@pytest.fixture
def tree(tmp_path):
    """The pids a fake server wrote; whatever of them is still alive after the test (only if the
    adapter failed to end it) is killed, so that a failing test leaves nothing behind."""
    def pids(name: str) -> list[int]:
        return [int(pid) for pid in (tmp_path / f"{name}.pids").read_text().split()]

    yield pids
    for path in tmp_path.glob("*.pids"):
        for pid in map(int, path.read_text().split()):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_server_that_writes_without_end_of_line_is_stopped_at_the_line_limit(tmp_path, tree):
    """Without a limit kraftspec would hold everything the server writes until the time limit
    (gigabytes); with it, the verdict names the fault as soon as the limit is passed."""
    command = fake_server(tmp_path, "endless", (
        "sys.stdin.readline()\n"
        "open(PIDS, 'w').write(str(os.getpid()))\n"
        "while True:\n"
        "    sys.stdout.buffer.write(b'x' * 65536)\n"
    ))
    adapter = SubprocessAdapter(command, timeout=10.0, start_timeout=LAUNCH)
    with pytest.raises(AdapterFailure) as caught:
        adapter.start(CONFIG)
    [pid] = tree("endless")
    assert str(caught.value) == (f"start: the implementation wrote more than {MAX_LINE_BYTES} bytes without a newline "
                                 f"(the limit of a line); killed it (pid {pid}); its stderr is empty")
    assert MAX_LINE_BYTES == 16 * 1024 * 1024 and not alive(pid)
    adapter.shutdown()


@pytest.mark.parametrize("length, verdict", [
    (1000, "start: expected a started object, got a line that is not JSON: 'xxx"),
    (1001, "start: the implementation wrote more than 1000 bytes without a newline"),
])
def test_the_line_limit_is_exact_and_configurable(tmp_path, length, verdict):
    """A line of exactly max_line_bytes (here 1000) is read (and is not JSON); one byte more is the fault."""
    command = fake_server(tmp_path, "long", (
        "sys.stdin.readline()\n"
        f"answer('x' * {length})\n"
        "sys.stdin.readline()\n"
    ))
    with SubprocessAdapter(command, timeout=10.0, start_timeout=LAUNCH, max_line_bytes=1000) as adapter:
        with pytest.raises(AdapterFailure) as caught:
            adapter.start(CONFIG)
        assert str(caught.value).startswith(verdict)


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polled"])
def test_a_crash_is_a_crash_even_when_a_child_keeps_its_stdout_open(tmp_path, tree, monkeypatch, pidfd):
    """The server forks a child that inherits its stdout and stays; then the server crashes. The pipe
    never ends, but the server's exit is seen: the verdict gives its exit status and stderr, not a
    timeout; and the child is ended with it. Without pidfds, the process is polled instead."""
    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open")
    command = fake_server(tmp_path, "crash", (
        "sys.stdin.readline()\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    signal.pause()\n"
        "open(PIDS, 'w').write(f'{os.getpid()} {child}')\n"
        f"answer({STARTED!r})\n"
        "sys.stdin.readline()\n"
        "sys.stderr.write('out of cheese\\n')\n"
        "sys.stderr.flush()\n"
        "os._exit(3)\n"
    ))
    adapter = SubprocessAdapter(command, timeout=5.0, start_timeout=LAUNCH)
    adapter.start(CONFIG)
    server_pid, child = tree("crash")
    assert alive(child)
    with pytest.raises(AdapterFailure) as caught:
        adapter.step(walk(1, 5).steps[0].event)
    assert str(caught.value) == (
        "step 0 (BrokerRegistration request): the implementation exited with code 3 (a process it started kept its "
        "stdout open; killed it); its stderr ends: out of cheese")
    assert not alive(server_pid) and not alive(child)
    adapter.shutdown()


@pytest.mark.parametrize("ending", ["stop", "fault"])
def test_a_grandchild_in_a_new_session_is_ended_with_the_server(tmp_path, tree, ending):
    """The server's child moves to a new session (setsid), starts a grandchild that holds the
    server's stdout and waits forever, and exits, so that the grandchild is an orphan in another
    session and process group. A stop ("stopped", exit 0) and a fault (a line that is not JSON) both
    end it."""
    command = fake_server(tmp_path, "setsid", (
        "sys.stdin.readline()\n"
        "read, write = os.pipe()\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    os.setsid()\n"
        "    grandchild = os.fork()\n"
        "    if grandchild == 0:\n"
        "        signal.pause()\n"
        "    os.write(write, str(grandchild).encode())\n"
        "    os._exit(0)\n"
        "os.waitpid(child, 0)\n"
        "grandchild = int(os.read(read, 64))\n"
        "open(PIDS, 'w').write(f'{os.getpid()} {grandchild}')\n"
        f"answer({STARTED!r})\n"
        "for line in sys.stdin:\n"
        "    if json.loads(line)['type'] == 'stop':\n"
        "        answer('{\"type\":\"stopped\"}')\n"
        "        break\n"
        "    answer('this is not JSON')\n"
    ))
    adapter = SubprocessAdapter(command, timeout=5.0, start_timeout=LAUNCH)
    adapter.start(CONFIG)
    server_pid, grandchild = tree("setsid")
    assert alive(grandchild) and os.getsid(grandchild) != os.getsid(server_pid)
    if ending == "fault":
        with pytest.raises(AdapterFailure, match="got a line that is not JSON: 'this is not JSON'"):
            adapter.step(walk(1, 5).steps[0].event)
        assert not alive(server_pid) and not alive(grandchild)
    adapter.shutdown()
    if ending == "stop":
        assert adapter.returncode == 0
    assert not alive(server_pid) and not alive(grandchild)
