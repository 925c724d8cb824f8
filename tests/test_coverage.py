"""Rule coverage of traces (conformance/coverage.py): the runtime rules read from the model's
source, the counts of steps and traces that fire each, and the report's forms."""

import json

from kraftspec.conformance.coverage import (
    NOT_REACHABLE_BY_EVENTS,
    checked_by_tests_only,
    cited_in,
    coverage,
    runtime_rules,
)
from kraftspec.conformance.targeted import Scenario, scripted
from kraftspec.spec import rules


def test_runtime_rules_are_spec_ids_and_leave_out_what_only_tests_check():
    runtime = set(runtime_rules())
    assert runtime <= set(rules())
    assert {"LEASE-8", "REG-4", "SHUT-3", "LOG-15", "TOPIC-7", "REASSIGN-12", "UNREG-1"} <= runtime
    assert {"ISR-3", "ISR-8"} <= runtime  # named through alter_isr.py's refuse(), which passes them on to reject()
    assert not runtime & {"MEM-4", "MEM-5", "LOG-2", "TOOL-1"}  # broker.py, framing.py, tools.py
    assert not any(r.startswith(("DEC-", "INV-", "CONF-")) for r in runtime)
    assert set(NOT_REACHABLE_BY_EVENTS) <= runtime
    checked = checked_by_tests_only()
    assert set(checked) == set(rules()) - runtime and all(checked.values())
    assert "broker" in checked["MEM-4"] and "invariant" in checked["INV-1"] and "framing" in checked["LOG-2"]


def test_citing_calls_are_found_through_a_helper_that_passes_its_argument_on():
    source = '''
def handle(x):
    cite("A-1")
    def refuse(rule, error):
        reject(rule)
    if x:
        return refuse("A-2", 5)
    rules.cite("A-3")
    other("A-4")
'''
    assert cited_in(source) == {"A-1", "A-2", "A-3"}


def known_trace():
    """Register broker 1 (committed), then a heartbeat that unfences it (committed)."""
    scenario = Scenario().register(1).heartbeat(1)
    return scripted("known", scenario)


def test_counts_on_a_known_trace():
    trace = known_trace()
    assert [s.event["kind"] for s in trace.steps] == ["request", "commit", "request", "commit"]
    report = coverage([trace])
    assert report.trace_count == 1 and report.step_count == 4
    assert report.steps["RPC-6"] == 2 and report.traces["RPC-6"] == 1  # the two requests
    assert report.steps["LOG-6"] == 2  # the two commits
    assert report.steps["REG-6"] == 1 and report.steps["LEASE-10"] == 1
    assert report.steps.get("LOG-14", 0) == 0 and report.traces["LOG-14"] == 1  # the bootstrap batch, at start
    assert "LOG-14" in report.at_start
    assert "ISR-2" in report.never_reached and "REG-6" not in report.never_reached
    assert set(NOT_REACHABLE_BY_EVENTS) <= set(report.never_reached)
    assert report.fired_elsewhere == ()

    twice = coverage([trace, trace])
    assert twice.steps["RPC-6"] == 4 and twice.traces["RPC-6"] == 2 and twice.traces["LOG-14"] == 2


def test_the_report_as_json_and_as_a_table():
    report = coverage([known_trace()])
    data = json.loads(json.dumps(report.to_json()))
    by_rule = {row["rule"]: row for row in data["rules"]}
    assert set(by_rule) == set(runtime_rules())
    assert by_rule["RPC-6"] == {"rule": "RPC-6", "title": by_rule["RPC-6"]["title"], "steps": 2, "traces": 1, "at_start": False}
    assert by_rule["RPC-6"]["title"]
    assert data["never_reached"] == list(report.never_reached)
    assert set(data["not_reachable_by_events"]) == set(NOT_REACHABLE_BY_EVENTS)
    assert "ISR-2" in data["missed"] and "LOG-13" not in data["missed"]
    assert set(data["test_only"]) == set(rules()) - set(runtime_rules())

    table = report.table()
    rpc6 = next(line for line in table.splitlines() if line.startswith("RPC-6 "))
    assert rpc6.split()[1:3] == ["2", "1"]
    assert "never reached: ISR-2" in table and "checked only by tests" in table and "DEC-1" in table


def test_the_module_command_refuses_a_malformed_trace_with_its_line_and_exit_2(tmp_path, capsys):
    """``python -m kraftspec.conformance.coverage`` reads through the checking reader too."""
    from kraftspec.conformance.coverage import main

    (tmp_path / "t.jsonl").write_text('{"type":"header","format":"kraftspec-trace","format_version":1}\n')
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 't.jsonl'}:1: config: missing" in err and "Traceback" not in err
