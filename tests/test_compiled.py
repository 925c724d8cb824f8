"""The compiled path (kraftspec compile, KRAFTSPEC_COMPILED=1) runs the same source files compiled by
Cython, and changes nothing but the speed: the same walks, byte for byte, in both profiles, the same
regression corpus recorded again, the same verdicts of impl; and it is used only where its build
matches the installed sources."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kraftspec.compiled import MANIFEST, build_key, sources

# What a process writes, compiled or plain: for walks of both profiles and the corpus recorded
# again, every line and the verdicts of impl; and then which kraftspec modules it ran compiled, and
# how many of the functions written at run time (kraftspec.generated).
PROGRAM = r"""
import json, sys, tempfile
from pathlib import Path
from kraftspec import compiled, generated
from kraftspec.bench import impl_cluster, impl_config, impl_fence
from kraftspec.impl.controller import Controller
from kraftspec.conformance.adapters import ImplAdapter
from kraftspec.conformance.generate import walk
from kraftspec.conformance.targeted import rerecorded
from kraftspec.conformance.replay import replay
from kraftspec.conformance.trace import read
from kraftspec.model import Config

out = open(sys.argv[1], "w", encoding="utf-8")
for profile in ("kip-631", "kafka"):
    config = Config.for_profile(profile)
    for seed in range(120):
        trace = walk(seed, 80, config=config)
        out.write(trace.name + "\n" + "\n".join(trace.lines()) + "\n")
        verdicts = [replay(trace, ImplAdapter(), level).passed for level in ("responses", "state", "records")]
        out.write(json.dumps(verdicts) + "\n")
for path in sorted(Path(sys.argv[2]).glob("*.jsonl")):
    trace = rerecorded(read(path))
    out.write(path.name + " " + trace.name + "\n" + "\n".join(trace.lines()) + "\n")
# a snapshot written and loaded from disk (the load reads plain PartitionRecords a batch at a time),
# after two fencings have given its partitions ISRs and leaders of several shapes
for profile in ("kip-631", "kafka"):
    with tempfile.TemporaryDirectory() as directory:
        controller = impl_cluster(2500, 12, directory, profile=profile)
        impl_fence(controller, 3)
        impl_fence(controller, 8)
        controller.take_snapshot()
        controller.close()
        loaded = Controller.open(directory, impl_config(profile))
        replication = loaded.state.replication
        for name in sorted(replication.topics_by_name):
            topic = replication.topics_by_name[name]
            out.write(f"{profile} {name} {topic.topic_id} {[p.fields() for p in topic.partitions]}\n")
        loaded.close()
out.close()
print(json.dumps([compiled.loaded(), generated.compiled_count()]))
"""

CORPUS = Path(__file__).resolve().parents[1] / "conformance" / "corpus"


def run_program(tmp_path: Path, name: str, env: dict[str, str]) -> tuple[bytes, tuple[list[str], int], str]:
    output = tmp_path / f"{name}.txt"
    result = subprocess.run([sys.executable, "-c", PROGRAM, str(output), str(CORPUS)], capture_output=True, text=True,
                            env={**os.environ, **env}, timeout=900)
    assert result.returncode == 0, result.stderr
    return output.read_bytes(), json.loads(result.stdout), result.stderr


def plain_env() -> dict[str, str]:
    return {"KRAFTSPEC_COMPILED": "0"}


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    """A build of the installed sources, made by the command users run."""
    root = tmp_path_factory.mktemp("compiled")
    result = subprocess.run([sys.executable, "-m", "kraftspec", "compile", "--into", str(root)],
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "built" in result.stdout
    return root


def test_a_compiled_run_writes_the_same_traces_and_verdicts_as_a_plain_one(tmp_path, build):
    env = {"KRAFTSPEC_COMPILED": "1", "KRAFTSPEC_COMPILED_DIR": str(build)}
    compiled_bytes, (compiled_modules, compiled_functions), _ = run_program(tmp_path, "compiled", env)
    plain_bytes, (plain_modules, plain_functions), _ = run_program(tmp_path, "plain", plain_env())
    assert plain_modules == [] and plain_functions == 0
    # the model's heart, the generator and impl really ran compiled
    for name in ("kraftspec.model.controller", "kraftspec.model.state", "kraftspec.model.heartbeat",
                 "kraftspec.conformance.simulation", "kraftspec.conformance.generate", "kraftspec.impl.controller",
                 "kraftspec.impl.codec", "kraftspec.impl.batch_format"):
        assert name in compiled_modules
    # and so did the functions written at run time that the walks and replays call most (attrs's
    # __init__ and __eq__, impl's message classes, the model state's copiers, the JSON converters)
    assert compiled_functions >= 100
    assert compiled_bytes == plain_bytes
    assert b"[true, true, true]" in plain_bytes and b"false" not in plain_bytes.split(b"\n")[2]
    assert plain_bytes.count(b"\nkip-631 topic-") == plain_bytes.count(b"\nkafka topic-") == 2  # the snapshots loaded


def test_a_build_that_does_not_match_the_sources_is_not_used(tmp_path, build):
    """Another key (as after any edit of a compiled source): plain Python, with a word saying so."""
    [directory] = [d for d in build.iterdir() if (d / MANIFEST).exists()]
    assert directory.name == build_key(sources())
    stale = tmp_path / "stale"
    stale.mkdir()
    (stale / "0123456789abcdef0123").symlink_to(directory, target_is_directory=True)
    result = subprocess.run([sys.executable, "-c", "from kraftspec import compiled; import kraftspec.model; print(compiled.loaded())"],
                            capture_output=True, text=True, env={**os.environ, "KRAFTSPEC_COMPILED": "1",
                                                                 "KRAFTSPEC_COMPILED_DIR": str(stale)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    assert "no compiled build" in result.stderr and "kraftspec compile" in result.stderr


def test_compile_where_says_whether_the_installed_sources_are_built(tmp_path, build):
    here = subprocess.run([sys.executable, "-m", "kraftspec", "compile", "--where", "--into", str(build)],
                          capture_output=True, text=True)
    assert here.returncode == 0 and "(built)" in here.stdout and build_key(sources()) in here.stdout
    empty = subprocess.run([sys.executable, "-m", "kraftspec", "compile", "--where", "--into", str(tmp_path)],
                           capture_output=True, text=True)
    assert empty.returncode == 1 and "(not built)" in empty.stdout


def test_compiling_again_reuses_the_build(build):
    result = subprocess.run([sys.executable, "-m", "kraftspec", "compile", "--into", str(build)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "already built" in result.stdout


def test_the_mutation_checks_refuse_to_run_compiled(build):
    """A mutant is made from a function's source and put in its module: with the compiled modules
    loaded it would not be what runs, so kraftspec mutate says to run it plain, and does nothing."""
    result = subprocess.run([sys.executable, "-m", "kraftspec", "mutate", "--no-stateful"], capture_output=True, text=True,
                            env={**os.environ, "KRAFTSPEC_COMPILED": "1", "KRAFTSPEC_COMPILED_DIR": str(build)}, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == "kraftspec: error: the mutation checks change the plain modules' functions: run them without KRAFTSPEC_COMPILED=1\n"
    assert result.stdout == ""


# Conform checks 30 seeds, then says which modules ran compiled and how many objects those traces
# left in reference cycles, which only the cyclic collector frees.
CYCLES = r"""
import gc, json
from kraftspec import compiled
from kraftspec.conformance.spark import Workload, check_seed
from kraftspec.conformance.subprocess_adapter import adapter_from_spec

workload, adapter = Workload(31), adapter_from_spec("impl")
check_seed(0, workload, adapter)
gc.collect()
gc.disable()
gc.set_debug(gc.DEBUG_SAVEALL)
for seed in range(1, 31):
    check_seed(seed, workload, adapter)
gc.collect()
print(json.dumps([compiled.loaded(), len(gc.garbage)]))
"""


def test_a_compiled_trace_is_freed_when_it_is_done_not_by_the_cyclic_collector(build):
    # compiled, closures that call one another share one scope object that refers back to them:
    # replay's helpers were such closures, and kept every trace (some 360 objects) in a cycle
    result = subprocess.run([sys.executable, "-c", CYCLES], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "KRAFTSPEC_COMPILED": "1", "KRAFTSPEC_COMPILED_DIR": str(build)})
    assert result.returncode == 0, result.stderr
    modules, garbage = json.loads(result.stdout)
    assert "kraftspec.conformance.replay" in modules
    assert garbage / 30 < 20, f"{garbage / 30:.0f} objects a trace left in reference cycles"


# impl's paths that kraftspec bench times, in a compiled process, in both profiles, on a cluster of
# 2,000 partitions: every function written at run time that they call (a message's make, a record's
# __init__, a codec) is counted where it runs in the interpreter, by name.
BENCHED_PATHS = r"""
import collections, json, sys, tempfile
from kraftspec import compiled
from kraftspec.bench import ImplIsrMix, impl_cluster, impl_config, impl_fence, timed_heartbeat
from kraftspec.impl.controller import Controller

interpreted = collections.Counter()

def count(frame, event, arg):
    name = frame.f_code.co_filename
    if event == "call" and (name.startswith("<kraftspec generated") or name.startswith("<attrs generated")):
        interpreted[name] += 1

for profile in ("kip-631", "kafka"):
    with tempfile.TemporaryDirectory() as directory:
        controller = impl_cluster(2000, 20, directory, profile=profile)
        mix = ImplIsrMix(controller, 200)
        sys.setprofile(count)
        mix.run(2)
        impl_fence(controller, 4)
        timed_heartbeat(controller, 14, want_shut_down=True)
        controller.commit(controller.log_end_offset)
        sys.setprofile(None)
        controller.take_snapshot()
        controller.close()
        sys.setprofile(count)
        Controller.open(directory, impl_config(profile)).close()
        sys.setprofile(None)
print(json.dumps([compiled.loaded(), interpreted]))
"""


def test_the_paths_of_impl_that_bench_times_run_no_function_written_at_run_time_in_the_interpreter(build):
    # a fencing calls a PartitionChangeRecord's make for each of its partitions, which the conform
    # walks call too seldom for the build to collect it: interpreted, it was a third of a fencing's
    # instructions; kraftspec compile now exercises these paths too (kraftspec.compiled.exercise)
    result = subprocess.run([sys.executable, "-c", BENCHED_PATHS], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "KRAFTSPEC_COMPILED": "1", "KRAFTSPEC_COMPILED_DIR": str(build)})
    assert result.returncode == 0, result.stderr
    modules, interpreted = json.loads(result.stdout)
    assert "kraftspec.impl.controller" in modules and "kraftspec.impl.partitions" in modules
    # what runs once per partition or per request is compiled; what runs once per broker or per
    # topic (a registration record replayed from the snapshot, say) may be interpreted
    assert {name: calls for name, calls in interpreted.items() if calls >= 100} == {}


def test_the_declaration_files_are_part_of_the_build_key(tmp_path):
    """The .pxd files (Cython declarations beside impl's sources and the simulation's) change the
    build as the sources do."""
    from kraftspec.compiled import declarations

    modules = sources()
    pxds = declarations(modules)
    assert {"kraftspec.impl.controller", "kraftspec.impl.leases", "kraftspec.impl.replication", "kraftspec.impl.codec",
            "kraftspec.conformance.simulation"} <= set(pxds)
    assert all(name.startswith(("kraftspec.impl.", "kraftspec.conformance.")) for name in pxds)
    copy = tmp_path / "leases.py"
    copy.write_bytes(modules["kraftspec.impl.leases"].read_bytes())
    (tmp_path / "leases.pxd").write_bytes(pxds["kraftspec.impl.leases"].read_bytes())
    moved = {**modules, "kraftspec.impl.leases": copy}
    assert build_key(moved) == build_key(modules)
    (tmp_path / "leases.pxd").write_bytes(pxds["kraftspec.impl.leases"].read_bytes() + b"\n# changed\n")
    assert build_key(moved) != build_key(modules)


def test_the_releases_of_attrs_and_cython_are_part_of_the_build_key(monkeypatch):
    """attrs writes the source of its classes' methods, and Cython the C that the build changes: another
    release of either is another build."""
    import importlib.metadata

    modules = sources()
    key = build_key(modules)
    version = importlib.metadata.version
    for name in ("attrs", "Cython"):
        monkeypatch.setattr(importlib.metadata, "version", lambda d, name=name: "0.0" if d == name else version(d))
        assert build_key(modules) != key, name
    monkeypatch.setattr(importlib.metadata, "version", version)
    assert build_key(modules) == key


# A handler module imported before the controller (its declarations name the Controller's type,
# which needs kraftspec.impl.controller imported first), then what impl's classes are.
DECLARED = r"""
import json
import kraftspec.impl.heartbeat
from kraftspec import compiled
from kraftspec.impl.controller import Controller, Outcome, Reply
from kraftspec.impl.leases import Lease
from kraftspec.impl.replication import Partition
HEAP_TYPE = 1 << 9
print(json.dumps({"loaded": compiled.loaded(),
                  "heap": {c.__name__: bool(c.__flags__ & HEAP_TYPE) for c in (Controller, Outcome, Reply, Lease, Partition)}}))
"""


def test_compiled_impl_classes_are_extension_types_whatever_is_imported_first(build):
    result = subprocess.run([sys.executable, "-c", DECLARED], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "KRAFTSPEC_COMPILED": "1", "KRAFTSPEC_COMPILED_DIR": str(build)})
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert "kraftspec.impl.heartbeat" in answer["loaded"] and "kraftspec.impl.controller" in answer["loaded"]
    assert answer["heap"] == {"Controller": False, "Outcome": False, "Reply": False, "Lease": False, "Partition": False}
    plain = subprocess.run([sys.executable, "-c", DECLARED], capture_output=True, text=True, timeout=120,
                           env={**os.environ, **plain_env()})
    assert plain.returncode == 0, plain.stderr
    assert set(json.loads(plain.stdout)["heap"].values()) == {True}  # plain Python: classes as written


def test_each_declared_class_declares_exactly_the_slots_of_its_class():
    """A class a .pxd declares as an extension type has, compiled, only the attributes declared
    there: each must be the class's __slots__ in the plain source, no more and no fewer, or the
    compiled build would refuse an attribute plain Python accepts (or keep one it no longer has)."""
    import importlib
    import re

    from kraftspec.compiled import declarations

    checked = 0
    for name, pxd in declarations(sources()).items():
        module = importlib.import_module(name)
        declared: dict[str, set[str]] = {}
        current = None
        for line in pxd.read_text(encoding="utf-8").splitlines():
            if match := re.match(r"cdef class (\w+)\s*:", line):
                current = declared.setdefault(match.group(1), set())
            elif current is not None and (match := re.match(r"\s+cdef (?:public |readonly )?\w+ ([\w, ]+)$", line)):
                current.update(attribute.strip() for attribute in match.group(1).split(","))
            elif line and not line[0].isspace():
                current = None
        for class_name, attributes in declared.items():
            slots = set(getattr(module, class_name).__slots__) - {"__weakref__"}
            assert attributes == slots, f"{pxd.name}: {class_name} declares {sorted(attributes ^ slots)} unlike its __slots__"
            checked += 1
    assert checked >= 10


def test_a_source_cython_cannot_compile_is_reported_in_one_message_and_nothing_is_built(tmp_path, monkeypatch, capsys):
    import Cython.Build
    from Cython.Compiler.Errors import CompileError as CythonError

    from kraftspec import compiled
    from kraftspec.cli import main

    def refuse(*args, **kwargs):
        raise CythonError(None, "/tmp/src/kraftspec/_generated.py")

    monkeypatch.setattr(Cython.Build, "cythonize", refuse)
    monkeypatch.setattr(compiled, "collect_generated", lambda: {})
    assert main(["compile", "--into", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kraftspec compile: Cython ") and "could not compile /tmp/src/kraftspec/_generated.py" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not any(tmp_path.rglob(compiled.MANIFEST))


def test_a_new_build_leaves_the_newest_builds_and_removes_older_ones(tmp_path):
    import os

    from kraftspec import compiled

    builds = []
    for age in range(6):  # the first one the newest
        build = tmp_path / f"{age:020x}"
        (build / "kraftspec").mkdir(parents=True)
        (build / "kraftspec" / "model.so").write_bytes(b"x" * 1000)
        (build / compiled.MANIFEST).write_text("{}")
        os.utime(build / compiled.MANIFEST, (1_000_000 - age, 1_000_000 - age))
        builds.append(build)
    current = builds[4]  # the one just built is kept, whatever its time
    (tmp_path / "notes").mkdir()  # not a build: no manifest
    (tmp_path / "0123456789abcdef0123").mkdir()  # named as a build is, but without a manifest
    removed = compiled.prune(tmp_path, current)
    assert sorted(path for path, _ in removed) == [builds[2], builds[3], builds[5]]
    assert all(size == 1002 for _, size in removed)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [builds[0].name, builds[1].name, current.name, "notes", "0123456789abcdef0123"])


def test_a_new_build_removes_what_a_stopped_build_left_and_not_a_build_under_way(tmp_path):
    import os

    from kraftspec import compiled

    current = tmp_path / ("f" * 20)
    current.mkdir()
    now = 1_000_000_000.0
    stopped, running = tmp_path / ".building-stopped", tmp_path / ".building-running"
    old = now - compiled.UNFINISHED_AFTER_S - 60
    for staging in (stopped, running):
        (staging / "kraftspec").mkdir(parents=True)
        (staging / "kraftspec" / "model.so").write_bytes(b"x" * 500)
        for path in (staging, staging / "kraftspec", staging / "kraftspec" / "model.so"):
            os.utime(path, (old, old))
    os.utime(running / "kraftspec" / "model.so", (now - 5, now - 5))  # still being written
    removed = compiled.prune(tmp_path, current, now=now)
    assert removed == [(stopped, 500)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([current.name, running.name])


def test_compile_help_says_which_builds_it_keeps(capsys):
    from kraftspec.cli import main

    with pytest.raises(SystemExit):
        main(["compile", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "the 3 newest are kept and older ones removed, as is what a compile that was stopped left there" in said
