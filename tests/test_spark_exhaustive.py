"""The exhaustive enumeration on Spark: the same states, paths and violations as the plain
frontier, and every leaf trace replayed on the executors, passing against impl and failing
against broken servers exactly where they break. One local session (``local[2]``) for the module,
on a scope of 2 brokers and 1 partition to depth 2 (258 states, 242 leaf traces)."""

from __future__ import annotations

import json
import os
import pickle
import shlex
import sys
from functools import partial

import pytest

from kraftspec.cli import main
from kraftspec.conformance.exhaustive import Node, Scope, Successor, expand, frontier, leaf_paths, state_key, trace_of
from kraftspec.conformance.replay import replay
from kraftspec.conformance.spark_exhaustive import ExhaustiveReport, SparkMapper, explore
from kraftspec.conformance.subprocess_adapter import adapter_from_spec

MASTER = "local[2]"
SCOPE = Scope(brokers=2, partitions=1)
DEPTH = 2
MUTANT = "lease-expiry-off-by-one"  # LEASE-8: a lease lapses one tick late; 30 of the 242 traces show it
BROKEN_SERVER = "subprocess:" + shlex.join([sys.executable, "-c", (
    "from kraftspec.conformance.examples.impl_server import main\n"
    "from kraftspec.conformance.mutation import mutant_named\n"
    f"with mutant_named({MUTANT!r}).applied():\n"
    "    raise SystemExit(main([]))\n")])
"""impl behind the example server, with one rule broken in the server's process."""


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(MASTER).appName("kraftspec exhaustive tests")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def plain():
    return frontier(SCOPE, DEPTH)


def test_the_expansion_of_a_level_pickles_and_gives_the_same_successors():
    from pyspark import cloudpickle

    expand_one = partial(expand, SCOPE, key=state_key, check=True)
    node = Node(b"root", ())
    for dumps in (pickle.dumps, cloudpickle.dumps):
        copy = pickle.loads(dumps(expand_one))
        assert copy.func is expand and copy.args == (SCOPE,)
        assert copy(node) == expand_one(node) != []
    successor = expand_one(node)[0]
    assert pickle.loads(pickle.dumps(successor)) == successor


def test_the_spark_mapper_keeps_the_order_and_the_violations(spark, plain):
    nodes = [Node(fingerprint, path) for fingerprint, path in plain.paths.items() if len(path) == 1]

    def planted(node):  # a pretend invariant that every successor through action 3 breaks
        return [Successor(s.fingerprint, s.path, ("PLANTED",) if 3 in s.path else ()) for s in expand(SCOPE, node)]

    expected = list(map(planted, nodes))
    assert any(s.violations for successors in expected for s in successors)
    for slices in (None, 1, 7):
        mapper = SparkMapper(spark.sparkContext, slices)
        assert mapper(planted, nodes) == expected
        assert mapper.jobs == 1
    assert SparkMapper(spark.sparkContext)(planted, []) == []


@pytest.mark.parametrize("slices", [None, 5])
def test_the_frontier_on_spark_is_the_plain_frontier(spark, plain, slices):
    on_spark = frontier(SCOPE, DEPTH, mapper=SparkMapper(spark.sparkContext, slices))
    assert on_spark.paths == plain.paths  # the same states, each with the same shortest path
    assert list(on_spark.paths) == list(plain.paths)  # found in the same order
    assert [(l.depth, l.states, l.transitions) for l in on_spark.levels] == [(l.depth, l.states, l.transitions)
                                                                              for l in plain.levels]
    assert on_spark.violations == plain.violations
    assert leaf_paths(on_spark) == leaf_paths(plain)
    assert (plain.states, plain.transitions) == (258, 366)


def test_every_leaf_trace_replays_against_impl_on_the_executors(spark, plain):
    seen = []
    report = explore(spark, SCOPE, DEPTH, "impl", "records", progress=seen.append)
    assert isinstance(report, ExhaustiveReport)
    assert [(l.depth, l.states, l.transitions) for l in seen] == [(l.depth, l.states, l.transitions)
                                                                   for l in plain.levels[1:]]
    assert (report.states, report.transitions, report.depth_reached) == (plain.states, plain.transitions, DEPTH)
    assert report.violations == ()
    assert report.leaves == report.replayed == report.passed == len(leaf_paths(plain)) == 242
    assert report.failed == 0 and report.failures == () and report.ok

    data = json.loads(json.dumps(report.to_json()))
    assert data["scope"] == SCOPE.params() and data["depth"] == DEPTH
    assert (data["states"], data["transitions"], data["leaves"], data["replayed"], data["passed"], data["failed"]) == (
        258, 366, 242, 242, 242, 0)
    assert [level["states"] for level in data["levels"]] == [l.states for l in plain.levels]
    assert data["violations"] == [] and data["failures"] == [] and data["master"] == MASTER


def test_without_an_adapter_nothing_is_replayed(spark, plain):
    report = explore(spark, SCOPE, 1)
    assert (report.states, report.leaves, report.replayed, report.adapter) == (
        1 + plain.levels[1].states, plain.levels[1].states, 0, None)


def test_a_broken_implementation_fails_exactly_the_traces_that_show_its_bug(spark, plain):
    report = explore(spark, SCOPE, DEPTH, BROKEN_SERVER, "records")

    expected = set()  # the same traces replayed one by one on the driver, against one server
    with adapter_from_spec(BROKEN_SERVER) as adapter:
        for path in leaf_paths(plain):
            trace = trace_of(SCOPE, path)
            if not replay(trace, adapter, "records").passed:
                expected.add(trace.name)
    assert 0 < len(expected) < report.leaves
    assert {f.name for f in report.failures} == expected
    assert (report.replayed, report.failed, report.passed) == (242, len(expected), 242 - len(expected))
    assert not report.ok
    for failure in report.failures:
        assert failure.report.startswith(f"FAIL {failure.name}: ")
        assert "departs from the trace at step" in failure.report
        assert len(failure.path) == DEPTH and any(action.startswith("tick") for action in failure.path)


def test_a_server_that_exits_at_once_fails_every_trace_with_its_reason(spark):
    report = explore(spark, SCOPE, DEPTH, "subprocess:exit 3", "records", keep_failures=5)
    assert (report.replayed, report.passed, report.failed) == (242, 0, 242)
    assert len(report.failures) == 5  # all counted, the first five kept
    assert all("exited with code 3" in f.report for f in report.failures)
    assert len(report.to_json()["failures"]) == 5


def test_a_bad_adapter_or_level_is_refused_before_any_work(spark):
    with pytest.raises(ValueError, match="unknown adapter"):
        explore(spark, SCOPE, DEPTH, "nonsense")
    with pytest.raises(ValueError, match="unknown level"):
        explore(spark, SCOPE, DEPTH, "impl", "bytes")


def test_kraftspec_conform_exhaustive_writes_the_report(spark, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["conform", "--exhaustive", "--depth", str(DEPTH), "--brokers", "2", "--partitions", "1",
                 "--master", MASTER, "--out", str(out), "--json", str(tmp_path / "summary.json")])
    assert code == 0, capsys.readouterr()
    data = json.loads((out / "summary.json").read_text())
    assert data == json.loads((tmp_path / "summary.json").read_text())
    assert (data["states"], data["transitions"], data["replayed"], data["failed"]) == (258, 366, 242, 0)
    assert data["adapter"] == "impl" and data["violations"] == []
