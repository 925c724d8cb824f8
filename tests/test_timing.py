"""The lease timing theorems (proofs/timing.py) and ``kraftspec check-config``.

Every theorem is proved for its condition and shown exact; every counterexample Z3 returns for a
bad configuration is re-checked here in plain arithmetic against the timing model, and the
controller's part of it is replayed through the model itself, so that a wrong encoding cannot
pass unnoticed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from itertools import combinations

import attrs
import pytest
import z3

from cluster import Cluster
from kraftspec.cli import main
from kraftspec.model import Config, Error
from kraftspec.model.records import FenceBrokerRecord
from kraftspec.model.state import DEFAULT_HEARTBEAT_INTERVAL_MS, DEFAULT_SESSION_TIMEOUT_MS
from kraftspec.proofs import timing as T
from kraftspec.proofs.obligations import FAILED, PROVED
from kraftspec.proofs.timing import DEFAULT_TIMING, Condition, Params, Timing, check, check_all, fmt

# ---- the model of time, in plain arithmetic -------------------------------------------------------


def one_clock(r, *readings) -> bool:
    """Every pair of readings of one clock: it advanced within (1-r) and (1+r) of the real time."""
    for (t1, c1), (t2, c2) in combinations(readings, 2):
        (t1, c1), (t2, c2) = sorted([(t1, c1), (t2, c2)])
        if not (1 - r) * (t2 - t1) <= c2 - c1 <= (1 + r) * (t2 - t1):
            return False
    return True


def delivered(sent, arrived, d) -> bool:
    return sent <= arrived <= sent + d


def violates(theorem, p: Params, v: dict) -> bool:
    """Is ``v`` a schedule of ``theorem``'s scenario that breaks its property? Written from the
    timing model in proofs/timing.py's docstring, without Z3."""
    h, s, d, r, b, M = p.h, p.s, p.d, p.r, p.b, p.M
    if theorem is T.TIME_1:
        on_time = v["t0"] <= v["t1"] and v["bc1"] - v["bc0"] <= h and one_clock(r, (v["t0"], v["bc0"]), (v["t1"], v["bc1"]))
        arrive = delivered(v["t0"], v["a0"], d) and delivered(v["t1"], v["a1"], d)
        controller = one_clock(r, (v["a0"], v["cc0"]), (v["F"], v["ccF"]))
        lapsed_before_next = v["a0"] <= v["F"] <= v["a1"] and v["ccF"] >= v["cc0"] + s  # LEASE-8: now >= deadline
        return on_time and arrive and controller and lapsed_before_next
    if theorem is T.TIME_2_HEALTHY:
        broker = one_clock(r, (v["t0"], v["bc0"]), (v["t1"], v["bc1"]), (v["X"], v["bcX"]))
        answered = delivered(v["t1"], v["a1"], d) and delivered(v["a1"], v["e1"], d)
        timer_runs_out = v["bcX"] == v["bc0"] + b and v["t0"] <= v["X"] <= v["e1"]
        return v["t0"] <= v["t1"] and v["bc1"] - v["bc0"] <= h and broker and answered and timer_runs_out
    if theorem is T.TIME_2_LOST:
        ok = delivered(v["tj"], v["aj"], d) and one_clock(r, (v["tj"], v["bcj"]), (v["X"], v["bcX"]))
        ok = ok and one_clock(r, (v["aj"], v["ccj"]), (v["F"], v["ccF"])) and v["aj"] <= v["F"] and v["tj"] <= v["X"]
        return ok and v["bcX"] == v["bcj"] + b and v["ccF"] == v["ccj"] + s and v["X"] < v["F"]
    if theorem is T.TIME_2_PARTITION:
        P = v["P"]
        ok = delivered(v["tj"], v["aj"], d) and v["aj"] < P  # answered: the answer left before the failure
        ok = ok and v["tj"] <= v["tn"] and v["bcn"] - v["bcj"] <= h and v["inflight"] == (v["tn"] < P)
        if v["inflight"]:  # sent before the failure, so delivered; but at or after it, so unanswered
            ok = ok and delivered(v["tn"], v["an"], d) and v["an"] >= P
            ok = ok and v["tn"] <= v["tk"] < P and delivered(v["tk"], v["ak"], d) and v["ak"] >= max(P, v["an"])
            ok = ok and v["L"] == v["ak"]
        else:
            ok = ok and v["L"] == v["aj"]
        ok = ok and one_clock(r, (v["tj"], v["bcj"]), (v["tn"], v["bcn"]), (v["X"], v["bcX"])) and v["tj"] <= v["X"]
        ok = ok and one_clock(r, (v["L"], v["ccL"]), (v["F"], v["ccF"])) and v["L"] <= v["F"]
        return ok and v["bcX"] == v["bcj"] + b and v["ccF"] == v["ccL"] + s and v["X"] < v["F"]
    if theorem is T.TIME_3:
        ok = delivered(v["tk"], v["ak"], d) and delivered(v["ak"], v["ek"], d) and v["ak"] <= v["L"] <= v["F"]
        ok = ok and one_clock(r, (v["L"], v["ccL"]), (v["F"], v["ccF"])) and v["ccF"] >= v["ccL"] + s
        ok = ok and one_clock(r, (v["tk"], v["bck"]), (v["tau"], v["bctau"])) and v["ek"] <= v["tau"]
        return ok and v["bctau"] < v["bck"] + b and v["tau"] >= v["F"] + M
    raise AssertionError(theorem)


# One configuration per theorem that breaks exactly that theorem's condition (and TIME-1's holds).
BREAKING = {
    T.TIME_1: Timing(session_timeout_ms=4000),
    T.TIME_2_HEALTHY: Timing(self_fence_timeout_ms=6000),
    T.TIME_2_LOST: Timing(self_fence_timeout_ms=18001),  # seed 003's "longer", without room for d and r
    T.TIME_2_PARTITION: Timing(self_fence_timeout_ms=20000),
    T.TIME_3: Timing(max_stale_leader_ms=1000),
}


def theorem_id(theorem) -> str:
    return theorem.label.replace(" ", "_")


# ---- the theorems for all settings ------------------------------------------------------------------


@pytest.mark.parametrize("theorem", T.THEOREMS, ids=theorem_id)
def test_each_condition_suffices_for_all_settings_and_schedules(theorem):
    """TIME-1 to TIME-3: under the condition, Z3 finds no schedule that violates the property."""
    outcome = T.prove_condition(theorem)
    assert outcome.result == PROVED, outcome


@pytest.mark.parametrize("theorem", T.THEOREMS, ids=theorem_id)
def test_each_condition_is_exact(theorem):
    """TIME-1 to TIME-3: whenever the condition fails, the worst-case schedule violates the property."""
    outcome = T.prove_exact(theorem)
    assert outcome.result == PROVED, outcome


def test_a_proof_with_unsatisfiable_hypotheses_is_reported_vacuous():
    x = z3.Real("x")
    outcome = T.prove([x > 0, x < 0], x == 7)
    assert outcome.result == FAILED and "vacuous" in outcome.detail


@pytest.mark.parametrize(
    "theorem, weaker",
    [
        (T.TIME_1, Condition("s", ">", "h (CONF-2 alone)", lambda p: p.h)),
        (T.TIME_2_HEALTHY, Condition("b", ">", "h + 2d", lambda p: p.h + 2 * p.d)),
        (T.TIME_2_LOST, Condition("b", ">", "s (seed 003's words)", lambda p: p.s)),
        (T.TIME_2_PARTITION, T.C2_LOST),
        (T.TIME_3, Condition("b", "<=", "s + M", lambda p: p.s + p.M)),
    ],
    ids=lambda x: x.text if isinstance(x, Condition) else theorem_id(x),
)
def test_a_weaker_condition_is_refuted_with_a_real_counterexample(theorem, weaker):
    """The encodings can fail: a condition without room for delay or drift gets a countermodel,
    and the countermodel is a real violating schedule."""
    outcome = T.prove_condition(attrs.evolve(theorem, condition=weaker))
    assert outcome.result == FAILED
    m = outcome.values
    p = Params(*(m.get(name, Fraction(0)) for name in "h s d r b M".split()))
    assert weaker.holds(p) and all(T.domain(p))
    assert violates(theorem, p, m)


def test_time_2_answers_lost_no_broker_side_timeout_protects():
    """TIME-2: if the controller hears the broker but the broker does not hear the controller,
    the broker fences itself while its lease holds, whatever b is."""
    assert T.answers_lost_for_every_b().result == PROVED


def test_time_3_a_window_is_unavoidable_once_time_2_holds():
    """TIME-3 with M = 0 (the old leader has stopped when its leaderships move) contradicts TIME-2
    unless messages take no time and clocks do not drift."""
    assert T.window_forced_by_time2().result == PROVED
    assert T.window_positive().result == PROVED
    exact = Params.fractions(Timing(max_message_delay_ms=0, clock_drift_ppm=0, self_fence_timeout_ms=18000,
                                    max_stale_leader_ms=0))
    assert T.C2_LOST.holds(exact) and T.C3.holds(exact) and T.smallest_window_given_lost_case(exact) == 0


def test_every_timing_obligation_is_proved_within_the_solvers_time_limit():
    # a proof that outruns the solver's limit (SOLVER_TIMEOUT_MS) comes back unknown, not proved:
    # how fast the proofs run is measured by `kraftspec prove`, not asserted here
    obligations = T.obligations()
    assert {o.subject for o in obligations} == {"TIME-1", "TIME-2", "TIME-3", "TIME-4"}
    assert all(o.group == "timing" and o.result == PROVED for o in obligations), [o for o in obligations if not o.proved]
    assert all(o.seconds >= 0 for o in obligations)
    assert all(json.dumps(o.to_json()) for o in obligations)


# ---- one configuration at a time ---------------------------------------------------------------------


@pytest.mark.parametrize("theorem", T.THEOREMS, ids=theorem_id)
def test_a_breaking_configuration_fails_with_a_schedule_that_really_violates(theorem):
    timing = BREAKING[theorem]
    verdict = check(theorem, timing)
    assert verdict.outcome.result == FAILED and not verdict.condition_holds
    p = Params.fractions(timing)
    assert violates(theorem, p, verdict.outcome.values)
    timeline = verdict.timeline()
    assert timeline == sorted(timeline, key=lambda event: event[0]) and len(timeline) >= 4
    assert verdict.obligation().detail.startswith("at 0 ms the ")
    if theorem is not T.TIME_1:
        assert check(T.TIME_1, timing).holds  # the controller does not fence early: the story is a real run


def test_time_4_the_defaults_satisfy_every_theorem():
    """TIME-4: h and s are the model's defaults; d 1500, r 0.001, b 25000, M = s."""
    assert (DEFAULT_TIMING.heartbeat_interval_ms, DEFAULT_TIMING.session_timeout_ms) == (
        DEFAULT_HEARTBEAT_INTERVAL_MS, DEFAULT_SESSION_TIMEOUT_MS)
    verdicts = check_all(DEFAULT_TIMING)
    assert [v.theorem for v in verdicts] == list(T.THEOREMS)
    assert all(v.holds and v.condition_holds for v in verdicts)
    assert all(o.subject == "TIME-4" and o.proved for o in T.default_obligations())
    window = T.stale_leader_window(Params.fractions(DEFAULT_TIMING))
    assert fmt(window) == "7043.007"


@pytest.mark.parametrize(
    "timing",
    [
        Timing(session_timeout_ms=4500, clock_drift_ppm=0),  # TIME-1 at its bound: s = h + d
        Timing(session_timeout_ms=4501, clock_drift_ppm=0),
        Timing(self_fence_timeout_ms=6000, clock_drift_ppm=0),  # TIME-2 healthy at its bound: b = h + 2d
        Timing(self_fence_timeout_ms=19500, clock_drift_ppm=0),  # TIME-2 lost at its bound: b = s + d
        Timing(self_fence_timeout_ms=19499, clock_drift_ppm=0),
        Timing(self_fence_timeout_ms=24000, clock_drift_ppm=0),  # TIME-2 partition at its bound: b = h + s + 2d
        Timing(self_fence_timeout_ms=23999, clock_drift_ppm=0),
        Timing(self_fence_timeout_ms=18000, max_message_delay_ms=0, clock_drift_ppm=0),  # partition with d = 0
        Timing(self_fence_timeout_ms=17999, max_message_delay_ms=0, clock_drift_ppm=0),
        Timing(self_fence_timeout_ms=20000, max_stale_leader_ms=2000, clock_drift_ppm=0),  # TIME-3 at its bound
        Timing(self_fence_timeout_ms=20001, max_stale_leader_ms=2000, clock_drift_ppm=0),
        Timing(heartbeat_interval_ms=1000, session_timeout_ms=5000, max_message_delay_ms=2500),  # d > h
        Timing(heartbeat_interval_ms=2000, session_timeout_ms=9000, clock_drift_ppm=50_000),
        Timing(heartbeat_interval_ms=7, session_timeout_ms=9, max_message_delay_ms=1, clock_drift_ppm=100_000,
               self_fence_timeout_ms=13, max_stale_leader_ms=3),
    ],
    ids=lambda t: f"h{t.heartbeat_interval_ms}-s{t.session_timeout_ms}-d{t.max_message_delay_ms}-"
                  f"r{t.clock_drift_ppm}-b{t.self_fence_timeout_ms}-M{t.max_stale_leader_ms}",
)
def test_z3_and_the_closed_form_conditions_agree_at_and_around_the_bounds(timing):
    p = Params.fractions(timing)
    for verdict in check_all(timing):
        assert verdict.holds == verdict.condition_holds, verdict.theorem.label
        if not verdict.holds:
            assert violates(verdict.theorem, p, verdict.outcome.values), verdict.theorem.label


def test_time_1_counterexample_replayed_through_the_model():
    """TIME-1 against the model itself: the lease started by the first heartbeat lapses at the
    countermodel's controller reading (LEASE-8), before the next heartbeat arrives."""
    timing = BREAKING[T.TIME_1]
    v = check(T.TIME_1, timing).outcome.values
    c = Cluster(Config(heartbeat_interval_ms=timing.heartbeat_interval_ms, session_timeout_ms=timing.session_timeout_ms))
    c.start_brokers(1)
    zero = c.state.now_ms + 10  # the controller's reading 0
    c.tick(zero + int(v["cc0"]))
    c.heartbeat(1)  # heartbeat 0 arrives
    assert not c.tick(zero + int(v["ccF"]) - 1).batches
    fencing = c.tick(zero + int(v["ccF"]))  # F: the controller's clock reads cc0 + s
    assert [type(r) for b in fencing.batches for r in b.records] == [FenceBrokerRecord]
    assert v["a1"] >= v["F"]  # heartbeat 1 is still on its way


def test_time_2_lost_counterexample_replayed_through_the_model():
    """TIME-2 (heartbeats lost): the model fences only s after the last contact, while the broker's
    timer, started at that heartbeat's send, ran out earlier in real time."""
    timing = BREAKING[T.TIME_2_LOST]
    v = check(T.TIME_2_LOST, timing).outcome.values
    c = Cluster()
    c.start_brokers(1)
    zero = c.state.now_ms + 10
    c.tick(zero + int(v["ccj"]))
    c.heartbeat(1)  # the last heartbeat to get through
    still_active_at_x = c.tick(zero + int(v["ccj"]) + timing.session_timeout_ms - 1)
    assert not still_active_at_x.batches and not c.state.image.brokers[1].fenced
    assert c.tick(zero + int(v["ccF"])).batches
    assert v["X"] < v["F"]


def test_time_3_the_deposed_leader_cannot_change_the_isr_in_its_window():
    """TIME-3: in the window the deposed leader may still act, but the fencing elected a new leader
    with a new leader epoch, so its AlterIsr is refused (ISR-4, FENCED_LEADER_EPOCH)."""
    c = Cluster()
    c.start_brokers(1, 2, 3)
    c.create_topic("t", assignment=[[1, 2, 3]])
    old_epoch = c.partition("t").leader_epoch
    deadline = c.state.leases[1].deadline(c.state.config.session_timeout_ms)
    c.tick(deadline - 1000)
    for broker in (2, 3):
        c.heartbeat(broker)  # 2 and 3 renew; 1's heartbeats stop arriving
    c.tick(deadline)
    c.commit()
    assert c.partition("t").leader == 2 and c.partition("t").leader_epoch > old_epoch
    response = c.alter_isr(1, "t", [1], leader_epoch=old_epoch)
    assert response.topics[0].partitions[0].error_code == Error.FENCED_LEADER_EPOCH


# ---- kraftspec check-config --------------------------------------------------------------------------


def write(tmp_path, text: str, name: str = "server.properties"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_check_config_safe_file_exits_0_and_says_what_it_defaulted(tmp_path, capsys):
    path = write(tmp_path, "# a broker\nnode.id=1\nbroker.heartbeat.interval.ms=3000\nbroker.session.timeout.ms: 18000\n")
    assert main(["check-config", path]) == 0
    out = capsys.readouterr().out
    assert "SAFE" in out and "server.properties line 3" in out and "server.properties line 4" in out
    assert "kraftspec.max.message.delay.ms (d)" in out and "default: not in the file" in out
    assert "1 other key in the file" in out
    for theorem in ("CONF-2", "TIME-1", "TIME-2", "TIME-3"):
        assert theorem in out


def test_check_config_unsafe_file_exits_1_naming_the_theorem_and_a_timeline(tmp_path, capsys):
    path = write(tmp_path, "broker.heartbeat.interval.ms=3000\nbroker.session.timeout.ms=4000\n")
    assert main(["check-config", path]) == 1
    out = capsys.readouterr().out
    assert "TIME-1 (healthy broker) fails" in out and "UNSAFE" in out
    assert "controller fences the broker" in out and "4000 > 4507.506 is false" in out
    assert "broker.session.timeout.ms = 4508 would meet this condition" in out


def test_check_config_seed_003_longer_is_not_long_enough(tmp_path, capsys):
    """b = s + 1 is "longer than the controller-side timeout", yet fails with delay and drift."""
    path = write(tmp_path, "kraftspec.broker.self.fence.timeout.ms=18001\n")
    assert main(["check-config", path]) == 1
    out = capsys.readouterr().out
    assert "TIME-2 (heartbeats lost) fails" in out and "TIME-2 (partition) fails" in out
    assert "TIME-1 (healthy broker) fails" not in out


def test_check_config_conf_2_is_the_models_own_check(tmp_path, capsys):
    path = write(tmp_path, "broker.heartbeat.interval.ms=5000\nbroker.session.timeout.ms=5000\n")
    assert main(["check-config", path]) == 1
    out = capsys.readouterr().out
    assert "CONF-2 (session > interval) fails" in out
    assert "broker.session.timeout.ms (5000) must be longer than broker.heartbeat.interval.ms (5000)" in out


def test_check_config_json(tmp_path, capsys):
    path = write(tmp_path, "broker.session.timeout.ms=9000\nbroker.heartbeat.interval.ms=2000\n")
    assert main(["check-config", path, "--json", "--self-fence-timeout-ms", "15000"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["safe"] is True and report["self_fence_timeout_range_ms"] == [14022, 17973]
    assert report["settings"]["kraftspec.broker.self.fence.timeout.ms"] == {
        "symbol": "b", "value": 15000, "unit": "ms", "source": "command line --self-fence-timeout-ms"}
    assert [(c["theorem"], c["case"]) for c in report["checks"]][:2] == [("CONF-2", "session > interval"),
                                                                        ("TIME-1", "healthy broker")]
    assert main(["check-config", path, "--json"]) == 1  # b = 25000 leaves a deposed leader too long
    report = json.loads(capsys.readouterr().out)
    [failed] = [c for c in report["checks"] if not c["holds"]]
    assert failed["theorem"] == "TIME-3" and failed["result"] == "failed"
    assert failed["counterexample"]["timeline"][0] == {"ms": 0, "event": "the leader sends a heartbeat (its clock reads 0)"}
    assert failed["counterexample"]["schedule"]["F"] == pytest.approx(9000 / 1.001)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("broker.session.timeout.ms=18s\n", "line 1: broker.session.timeout.ms = '18s' is not an integer (ms)"),
        ("a=b\nbroker.heartbeat.interval.ms = -3000\n",
         "line 2: broker.heartbeat.interval.ms = '-3000' is negative; it must be at least 1"),
        ("broker.heartbeat.interval.ms=0\n", "line 1: broker.heartbeat.interval.ms = '0' must be positive"),
        ("kraftspec.clock.drift.ppm=1000000\n", "line 1: kraftspec.clock.drift.ppm = '1000000' is too large"),
        ("kraftspec.max.message.delay.ms=1.5\n", "line 1: kraftspec.max.message.delay.ms = '1.5' is not an integer"),
        ("kraftspec.max.message.delay.ms=1_500\n", "line 1: kraftspec.max.message.delay.ms = '1_500' is not an integer"),
        ("kraftspec.clock.drift=0.001\n", "line 1: kraftspec.clock.drift = '0.001' is not a kraftspec setting"),
        ("broker.session.timeout.ms=\n", "line 1: broker.session.timeout.ms = '' is not an integer"),
    ],
)
def test_check_config_bad_values_exit_2_naming_file_line_key_and_value(tmp_path, capsys, text, expected):
    path = write(tmp_path, text)
    assert main(["check-config", path]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert captured.err.startswith(f"kraftspec check-config: {path}, {expected}")


def test_check_config_bad_input_as_json(tmp_path, capsys):
    path = write(tmp_path, "\n\nbroker.session.timeout.ms = soon\n")
    assert main(["check-config", path, "--json"]) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["safe"] is False
    assert {k: report["error"][k] for k in ("file", "line", "key", "value")} == {
        "file": path, "line": 3, "key": "broker.session.timeout.ms", "value": "soon"}


def test_check_config_missing_file_and_directory_exit_2(tmp_path, capsys):
    assert main(["check-config", str(tmp_path / "nope.properties")]) == 2
    assert "nope.properties: no such file" in capsys.readouterr().err
    assert main(["check-config", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_check_config_bad_option_exits_2_naming_it(tmp_path, capsys):
    path = write(tmp_path, "")
    with pytest.raises(SystemExit) as exit_:
        main(["check-config", path, "--clock-drift-ppm", "-1"])
    assert exit_.value.code == 2
    assert "argument --clock-drift-ppm: '-1' is negative" in capsys.readouterr().err


def test_check_config_reads_java_properties(tmp_path, capsys):
    """Comments with # and !, key=value, key: value, key value, continuation lines, the last of
    two settings winning; options beat the file."""
    text = (
        "! comment\n  # indented comment\n\n"
        "broker.heartbeat.interval.ms 2000\n"
        "broker.session.timeout.ms = 9\\\n   000\n"
        "kraftspec.max.message.delay.ms=100\n"
        "kraftspec.max.message.delay.ms=1500\n"
        "kraftspec.broker.self.fence.timeout.ms=15000\n"
    )
    path = write(tmp_path, text)
    assert main(["check-config", path, "--json", "--clock-drift-ppm", "0"]) == 0
    settings = json.loads(capsys.readouterr().out)["settings"]
    assert settings["broker.heartbeat.interval.ms"]["value"] == 2000
    assert settings["broker.session.timeout.ms"] == {"symbol": "s", "value": 9000, "unit": "ms",
                                                     "source": "server.properties line 5"}
    assert settings["kraftspec.max.message.delay.ms"]["source"] == "server.properties line 8 (overrides line 7)"
    assert settings["kraftspec.clock.drift.ppm"]["source"] == "command line --clock-drift-ppm"
    assert settings["kraftspec.max.stale.leader.ms"] == {"symbol": "M", "value": 9000, "unit": "ms",
                                                         "source": "default: broker.session.timeout.ms"}


def test_check_config_help_explains(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["check-config", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for words in ("TIME-1", "TIME-3", "Exit status", "kraftspec.clock.drift.ppm", "--max-message-delay-ms",
                  "proofs/README.md", "default 25000"):
        assert words in out


def test_check_config_console_script(tmp_path):
    path = write(tmp_path, "broker.session.timeout.ms=18000\n")
    result = subprocess.run([sys.executable, "-m", "kraftspec", "check-config", path, "--json"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["safe"] is True
