"""``kraftspec explain``: a readable, deterministic story; clear errors for bad options; the
simulated cluster behind it never breaks an invariant."""

import io
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest

from kraftspec.cli import main
from kraftspec.conformance.simulation import Simulation
from kraftspec.model.invariants import violations


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


def test_explain_tells_a_story_with_records_replies_rules_and_state():
    code, out, _ = run("explain", "--seed", "1", "--steps", "60")
    assert code == 0
    assert out.count("\n[") == 60
    for part in ("request    #", "record     @", "reply      #", "rules      ", "brokers    ", "partitions ", "log        end"):
        assert part in out, part
    assert "RegisterBrokerRecord(broker_id=" in out and "REG-6" in out
    assert "Rules that fired" in out and "The BrokerHeartbeat exchange" in out
    assert "broker 1 (STARTING) sends its heartbeat" in out  # the process's state by its name


def test_explain_is_deterministic_by_seed():
    assert run("explain", "--seed", "9", "--steps", "50") == run("explain", "--seed", "9", "--steps", "50")
    assert run("explain", "--seed", "9", "--steps", "50")[1] != run("explain", "--seed", "10", "--steps", "50")[1]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["explain", "--brokers", "0"], "--brokers must be between 1 and 20, got 0"),
        (["explain", "--steps", "lots"], "--steps must be an integer, got 'lots'"),
        (["explain", "--heartbeat-interval-ms", "5000", "--session-timeout-ms", "4000"], "broker.session.timeout.ms (4000)"),
    ],
)
def test_bad_options_are_refused_naming_the_option_and_value(argv, message):
    code, out, err = run(*argv)
    assert code == 2 and message in err and "Traceback" not in err


def test_no_command_prints_help():
    code, _, err = run()
    assert code == 2 and "explain" in err


def test_the_console_module_runs():
    result = subprocess.run([sys.executable, "-m", "kraftspec", "explain", "--steps", "5", "--no-legend"], capture_output=True, text=True, check=True)
    assert result.stdout.count("\n[") == 5 and "Rules that fired" not in result.stdout


@pytest.mark.parametrize("seed", range(6))
def test_simulated_stories_never_break_an_invariant(seed):
    simulation = Simulation(seed, broker_count=4, partition_count=3)
    before = simulation.state
    for happening in simulation.run(300):
        assert not violations(before, happening.event, happening.result), (seed, happening.number, happening.note)
        before = happening.result.state


def test_explain_runs_the_profile_it_is_given_with_its_timings_unless_told_otherwise():
    code, out, _ = run("explain", "--steps", "20", "--profile", "kafka", "--no-legend")
    assert code == 0 and out.count("\n[") == 20
    assert "profile kafka (heartbeat every 2000 ms, session timeout 9000 ms" in out.splitlines()[0]
    code, out, _ = run("explain", "--steps", "5", "--profile", "kafka", "--session-timeout-ms", "12000")
    assert code == 0 and "heartbeat every 2000 ms, session timeout 12000 ms" in out.splitlines()[0]
    code, out, _ = run("explain", "--steps", "5")
    assert "profile kip-631 (heartbeat every 3000 ms, session timeout 18000 ms" in out.splitlines()[0]
    code, _, err = run("explain", "--profile", "kafka-3")
    assert code == 2 and "invalid choice: 'kafka-3'" in err
