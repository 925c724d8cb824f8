"""The mutation sweep: every small breakage of impl and of the model's handlers, generated from
their syntax, against the regression corpus and the stateful lockstep tests.

Where :mod:`kraftspec.conformance.mutation` holds a few dozen breakages written by hand, one per
rule, this module derives them mechanically, one syntax-tree change at a time, in every function
and method of the target files (:data:`TARGETS`):

* ``comparison``: ``==``/``!=``, ``in``/``not in``, ``is``/``is not``, ``<`` into ``>=`` (and so on);
* ``boundary``: ``<`` into ``<=``, ``>`` into ``>=`` and back;
* ``arithmetic``: ``+``/``-``, ``*`` into ``+``, ``//`` into ``*``, ``|``/``&`` (in ``x op y`` and ``x op= y``);
* ``constant``: an integer ``n`` into ``n + 1``, ``True``/``False``;
* ``boolean``: ``and``/``or``, ``not x`` into ``x``, an ``if``/``while``/``x if c else y`` condition negated;
* ``call``: ``min``/``max``, ``any``/``all``;
* ``statement``: a statement replaced by ``pass``, ``break``/``continue`` swapped;
* ``return``: ``return x`` into ``return None``.

Left alone: docstrings, f-strings and other string constants (they word messages), annotations,
default argument values, and the model's rule bookkeeping (``cite(...)``, ``reject(...)``
statements: they name rules, they decide nothing; ``tests/test_corpus.py`` checks them).

A mutant is applied **in memory, in this process**: the enclosing function is compiled again
from the mutated tree in its module's namespace and put in place of the original (in its class,
or in its module and wherever another module of the repository imported it by name); the
original goes back afterwards. No file is written. Then, with the mutant in place:

* **corpus**: every trace under ``conformance/corpus/`` is replayed at level ``records``, against
  :class:`~kraftspec.conformance.adapters.ImplAdapter` for a mutant of impl, then against impl with
  its metadata log in a temporary directory, the new active controller of every failover opened
  on that directory (the log's writes, snapshots and recovery), and against
  :class:`~kraftspec.conformance.adapters.ModelAdapter` for a mutant of the model;
* **stateful**: the machine of ``tests/test_stateful.py`` (model and impl in lockstep, every
  invariant after every step) runs with a fixed, derandomized budget (:data:`DEFAULT_EXAMPLES`
  sequences of 50 events), without shrinking.

Both checks run for every mutant, so that each column counts on its own. Before any mutant they
run unmutated: a trace that already fails is left out, a failing stateful run voids that column,
and the lines the two checks execute are recorded: a mutant on a line neither executes is
reported as *unreached* without being run (nothing here can kill it; it still counts against
the kill rate). A mutant that makes a check hang is stopped after a time limit (killed, as a
timeout); one that exhausts memory or crashes a worker is killed as a crash.

The mutants are spread over worker processes (``jobs``, default 2). Each result is appended to a
JSON Lines file as soon as it is known, with a fingerprint of everything it depends on (the
mutated function's source, the corpus, the stateful tests, the budget): a run that stops, by its
time budget or by a crash, is resumed by running it again, and only results whose fingerprint
still matches are reused. When only the corpus changed (a trace added), only the corpus check
runs again: the stateful column is kept, as it does not depend on the corpus.

Mutants judged *equivalent* (no input can tell them from the original) are listed, each with its
reason, in ``conformance/mutation_equivalents.toml``; the report shows them as equivalent and
leaves them out of the kill rate, flags any that was killed after all, and any entry that no
longer names a mutant.

From the command line: ``kraftspec mutate --sweep`` (``--help`` for the options).
"""

from __future__ import annotations

import ast
import copy
import hashlib
import importlib
import json
import os
import signal
import sys
import time
import tomllib
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from attrs import asdict, frozen

from .mutation import CORPUS, REPOSITORY, corpus_traces

TARGETS = (
    "impl/controller.py", "impl/registration.py", "impl/heartbeat.py", "impl/alter_isr.py", "impl/reassignment.py",
    "impl/topics.py", "impl/partitions.py", "impl/leases.py", "impl/builder.py", "impl/replication.py", "impl/cluster.py",
    "impl/state.py", "impl/journal.py",
    "model/registration.py", "model/heartbeat.py", "model/alter_isr.py", "model/reassignment.py",
    "model/topics.py", "model/partitions.py", "model/log.py", "model/controller.py",
    "model/replay.py",
)
"""The files swept by default: impl's event loop, handlers, decisions and in-memory state, and the model's handlers.
Not swept: the codec, impl/codec.py, wire.py and codegen.py (a code generator: its functions run
once, at import, and the codec is checked byte for byte by tests/test_impl_codec.py), the storage
layer, impl/storage.py and its parts (disk_files.py, batch_format.py, log_directory.py,
disk_log.py, snapshot_store.py, rebuild.py: the disk format and its recovery from damage; the
corpus's replay on disk drives only its ordinary path, and tests/test_impl_storage.py,
test_impl_recovery.py and test_torn_writes.py check the rest), the message and record classes,
and the model's invariants, framing, broker and tools (checkers and formats, not decisions), and
model/membership.py (two queries, for ``kraftspec explain`` and tests/test_leases.py, that no
handler calls: nothing a controller does depends on them)."""

EQUIVALENTS = Path(__file__).resolve().parent / "mutation_equivalents.toml"
DEFAULT_EXAMPLES = 50
STEPS = 50
DEFAULT_JOBS = 2
MIN_TIMEOUT_S = 30.0
MEMORY_LIMIT = 2 << 30  # bytes of address space a worker may use
DEFAULT_RESULTS = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kraftspec" / "mutation-sweep.jsonl"
BOOKKEEPING = frozenset({"cite", "reject"})
CORPUS_CHECK = "records; impl in memory, then on disk; the model recorded again"  # part of the corpus fingerprint: change it with run_corpus


# ---- generating mutants ------------------------------------------------------------------------


@frozen
class SweepMutant:
    """One syntax-tree change in one function: ``before`` becomes ``after`` at ``line``."""

    path: str  # relative to the repository: impl/controller.py
    qualname: str  # Controller.tick, or a module-level function's name
    index: int  # its place among the function's mutants, in source order
    operator: str
    line: int  # the line of the changed node
    statement_line: int  # the first line of the statement holding it
    end_line: int  # the last line of the change (of a compound statement's header); any executed line in between reaches it
    before: str
    after: str

    @property
    def id(self) -> str:
        return f"{self.path}:{self.qualname}:{self.index}"

    @property
    def change(self) -> str:
        return f"{self.before} -> {self.after}"

    @property
    def module(self) -> str:
        return "kraftspec." + self.path[: -len(".py")].replace("/", ".")

    @property
    def package(self) -> str:
        return self.path.split("/", 1)[0]

    def describe(self) -> str:
        return f"{self.id} ({self.operator}, line {self.line}): {self.change}"


_SWAPS = {
    "comparison": {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
                   ast.IsNot: ast.Is, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt},
    "boundary": {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt},
}
_ARITHMETIC = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.FloorDiv: ast.Mult, ast.Div: ast.Mult,
               ast.Mod: ast.FloorDiv, ast.BitOr: ast.BitAnd, ast.BitAnd: ast.BitOr, ast.LShift: ast.RShift,
               ast.RShift: ast.LShift}
_CALLS = {"min": "max", "max": "min", "any": "all", "all": "any"}
_DELETABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.Delete, ast.Assert,
              ast.Continue, ast.Break)
_SKIPPED_FIELDS = {"decorator_list", "args", "returns", "annotation", "type_comment"}


def _children(node: ast.AST) -> Iterator[tuple[str, int | None, ast.AST]]:
    for field, value in ast.iter_fields(node):
        if field in _SKIPPED_FIELDS and not isinstance(node, (ast.Call, ast.Lambda)):
            continue
        if isinstance(value, list):
            for i, child in enumerate(value):
                if isinstance(child, ast.AST):
                    yield field, i, child
        elif isinstance(value, ast.AST):
            yield field, None, value


def _is_docstring(node: ast.AST, parent: ast.AST, field: str, index: int | None) -> bool:
    return (field == "body" and index == 0 and isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str))


def _is_bookkeeping(node: ast.AST) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
            and node.value.func.id in BOOKKEEPING)


def _negated(test: ast.expr) -> ast.expr:
    return ast.UnaryOp(op=ast.Not(), operand=test)


def _changes(node: ast.AST, parent: ast.AST, field: str, index: int | None) -> list[tuple[str, Callable[[Any], ast.AST]]]:
    """The mutations of one node, as (operator, function from a copy of the node to its replacement).
    Each function takes a node of the class it was found for (a BoolOp, a Call...), hence Any."""
    found: list[tuple[str, Callable[[Any], ast.AST]]] = []

    def op_swap(kind: str, i: int, new: type):
        def apply(n):
            n.ops[i] = new()
            return n
        found.append((kind, apply))

    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            for kind in ("boundary", "comparison"):
                new = _SWAPS[kind].get(type(op))
                if new is not None:
                    op_swap(kind, i, new)
    elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _ARITHMETIC:
        new_op = _ARITHMETIC[type(node.op)]

        def arithmetic(n, new_op=new_op):
            n.op = new_op()
            return n
        found.append(("arithmetic", arithmetic))
    elif isinstance(node, ast.BoolOp):
        found.append(("boolean", lambda n: ast.BoolOp(op=ast.Or() if isinstance(n.op, ast.And) else ast.And(), values=n.values)))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        found.append(("boolean", lambda n: n.operand))
    elif isinstance(node, ast.Constant) and not isinstance(parent, ast.JoinedStr):
        if isinstance(node.value, bool):
            found.append(("constant", lambda n: ast.Constant(not n.value)))
        elif isinstance(node.value, int):
            found.append(("constant", lambda n: ast.Constant(n.value + 1)))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS:
        found.append(("call", lambda n: ast.Call(func=ast.Name(_CALLS[n.func.id], ast.Load()), args=n.args, keywords=n.keywords)))
    if isinstance(node, (ast.If, ast.While, ast.IfExp)):
        def negate(n):
            n.test = _negated(n.test)
            return n
        found.append(("boolean", negate))
    if isinstance(node, ast.Return) and node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
        found.append(("return", lambda n: ast.Return(value=ast.Constant(None))))
    if isinstance(node, (ast.Break, ast.Continue)):
        found.append(("statement", lambda n: ast.Continue() if isinstance(n, ast.Break) else ast.Break()))
    elif isinstance(node, _DELETABLE) and field in ("body", "orelse", "finalbody", "handlers") and index is not None:
        if not _is_docstring(node, parent, field, index) and not _is_bookkeeping(node) and not (found and isinstance(node, ast.Return)):
            found.append(("statement", lambda n: ast.Pass()))
    return found


def _walk(root: ast.AST) -> Iterator[tuple[ast.AST, str, int | None, ast.AST, int]]:
    """(parent, field, index, node, statement line) for every node under ``root``, in source order."""

    def visit(node: ast.AST, statement_line: int):
        for field, index, child in _children(node):
            if isinstance(child, ast.JoinedStr):
                continue
            line = child.lineno if isinstance(child, ast.stmt) else statement_line
            yield node, field, index, child, line
            if not isinstance(child, (ast.ClassDef,)):
                yield from visit(child, line)

    yield from visit(root, getattr(root, "lineno", 0))


def _points(function: ast.AST) -> Iterator[tuple[ast.AST, str, int | None, ast.AST, int, str, Callable]]:
    for parent, field, index, node, statement_line in _walk(function):
        for operator, apply in _changes(node, parent, field, index):
            yield parent, field, index, node, statement_line, operator, apply


FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def functions(tree: ast.Module) -> Iterator[tuple[str, FunctionNode]]:
    """(qualname, def node) for every module-level function and every method of a class, nested classes included."""

    def visit(body, prefix: str):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield prefix + node.name, node
            elif isinstance(node, ast.ClassDef):
                yield from visit(node.body, f"{prefix}{node.name}.")

    yield from visit(tree.body, "")


def _unparse(node: ast.AST) -> str:
    if isinstance(node, ast.stmt):
        text = ast.unparse(node).splitlines()
        return text[0] + (" ..." if len(text) > 1 else "")
    return ast.unparse(node)


def _uses_class_cell(function: ast.AST) -> bool:
    """Whether a method relies on its class body (``super()``, ``__class__``): it cannot be compiled alone."""
    return any(isinstance(n, ast.Name) and n.id in ("super", "__class__") for n in ast.walk(function))


def mutants_of(path: str, source: str) -> list[SweepMutant]:
    """Every mutant of one file (``path`` relative to the repository), in source order."""
    tree = ast.parse(source)
    found = []
    for qualname, function in functions(tree):
        if _uses_class_cell(function):
            continue
        for index, (_, _, _, node, statement_line, operator, apply) in enumerate(_points(function)):
            assert isinstance(node, (ast.stmt, ast.expr))  # _changes mutates only statements and expressions
            mutated = apply(copy.deepcopy(node))
            header = getattr(node, "test", None) or getattr(node, "iter", None) if isinstance(node, ast.stmt) else None
            end = (header or node).end_lineno or statement_line
            found.append(SweepMutant(path, qualname, index, operator, getattr(node, "lineno", statement_line),
                                     statement_line, max(end, statement_line), _unparse(node), _unparse(mutated)))
    return found


def source_of(path: str) -> str:
    return (REPOSITORY / path).read_text(encoding="utf-8")


def generate(paths: Iterable[str] = TARGETS) -> list[SweepMutant]:
    """Every mutant of the given files."""
    return [m for path in paths for m in mutants_of(path, source_of(path))]


# ---- applying one ----------------------------------------------------------------------------


def _function_node(tree: ast.Module, qualname: str) -> FunctionNode:
    for name, node in functions(tree):
        if name == qualname:
            return node
    raise KeyError(f"no function {qualname}")


def mutated_function(mutant: SweepMutant, source: str) -> FunctionNode:
    """The mutant's function, as a tree with the one change made."""
    function = copy.deepcopy(_function_node(ast.parse(source), mutant.qualname))
    for index, (parent, field, position, node, _, operator, apply) in enumerate(_points(function)):
        if index == mutant.index:
            if operator != mutant.operator or _unparse(node) != mutant.before:
                raise LookupError(f"{mutant.id}: the source changed since the mutant was generated")
            replacement = apply(node)
            if position is None:
                setattr(parent, field, replacement)
            else:
                getattr(parent, field)[position] = replacement
            return ast.fix_missing_locations(function)
    raise LookupError(f"{mutant.id}: no such mutant in the current source")


def _repository_modules() -> list[Any]:
    root = str(REPOSITORY)
    return [m for m in list(sys.modules.values())
            if getattr(m, "__file__", None) and str(m.__file__).startswith(root) and m.__name__ != __name__]


class applied:
    """Context manager: the mutant in place in this process, for the duration of the block.

    The function is compiled from the mutated tree in its module's namespace and replaces the
    original in its class, or in its module and in every module of the repository (and any dict at
    their top level) that holds the original by name. Everything goes back on the way out."""

    def __init__(self, mutant: SweepMutant, source: str | None = None) -> None:
        self.mutant = mutant
        self.source = source if source is not None else source_of(mutant.path)
        self.undo: list[Callable[[], None]] = []

    def __enter__(self) -> SweepMutant:
        mutant = self.mutant
        module = importlib.import_module(mutant.module)
        function = mutated_function(mutant, self.source)
        filename = module.__file__
        assert filename is not None  # a module of the repository, imported from its file
        code = compile(ast.Module(body=[function], type_ignores=[]), filename, "exec")
        made: dict[str, Any] = {}
        exec(code, module.__dict__, made)  # noqa: S102 - the mutant, compiled from the repository's own source
        name = function.name
        owner = module
        for part in mutant.qualname.split(".")[:-1]:
            owner = getattr(owner, part)
        original = vars(owner)[name]
        self._set(owner, name, made[name])
        if owner is module:
            for other in _repository_modules():
                for attribute, value in list(vars(other).items()):
                    if value is original and (other, attribute) != (module, name):
                        self._set(other, attribute, made[name])
                    elif type(value) is dict and not attribute.startswith("__"):
                        for key, entry in list(value.items()):
                            if entry is original:
                                self._set_item(value, key, made[name])
        return mutant

    def _set(self, owner: Any, attribute: str, value: Any) -> None:
        before = vars(owner)[attribute]
        setattr(owner, attribute, value)
        self.undo.append(lambda: setattr(owner, attribute, before))

    def _set_item(self, mapping: dict, key: Any, value: Any) -> None:
        before = mapping[key]
        mapping[key] = value
        self.undo.append(lambda: mapping.__setitem__(key, before))

    def __exit__(self, *exc) -> None:
        while self.undo:
            self.undo.pop()()


# ---- the checks ----------------------------------------------------------------------------


class MutantTimeout(BaseException):
    """A check ran past its time limit (a BaseException, so that Hypothesis does not take it for a failure to shrink)."""


def _stateful_machine():
    tests = str(REPOSITORY / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    return importlib.import_module("test_stateful").ControllerLockstep


def _stateful_settings(examples: int):
    from hypothesis import HealthCheck, Phase, settings

    return settings(max_examples=examples, stateful_step_count=STEPS, derandomize=True, database=None,
                    phases=[Phase.generate], report_multiple_bugs=False, deadline=None,
                    suppress_health_check=list(HealthCheck), print_blob=False)


def run_stateful(examples: int) -> str | None:
    """The stateful machine with a fixed, derandomized budget; None if it passes, else what failed."""
    from hypothesis.stateful import run_state_machine_as_test

    try:
        run_state_machine_as_test(_stateful_machine(), settings=_stateful_settings(examples))
    except MutantTimeout:
        raise
    except BaseException as failure:  # noqa: BLE001 - any failure of the run kills the mutant
        if isinstance(failure, (KeyboardInterrupt, SystemExit)):
            raise
        return _first_line(failure)
    return None


def _impl_on_disk():
    """impl with its metadata log in a temporary directory, recovered from it at every failover."""
    import shutil
    import tempfile

    from kraftspec.impl.controller import Controller

    from .adapters import ImplAdapter

    class ImplOnDisk(ImplAdapter):
        """The new active controller of a failover is a controller opened on the old one's directory
        (after the old one undid its uncommitted tail and answered what waited): so the corpus also
        checks the log's writes, snapshots and recovery. Request numbering carries over."""

        name = "impl on disk"
        directory: str | None = None

        def start(self, config: dict[str, Any]) -> None:
            super().start(config)
            in_memory = self.controller
            assert in_memory is not None  # ImplAdapter.start made it
            shared_memory = Path("/dev/shm")  # no real disk writes, where the system offers a memory file system
            directory = self.directory = tempfile.mkdtemp(prefix="kraftspec-sweep-", dir=shared_memory if shared_memory.is_dir() else None)
            self.controller = Controller.create(directory, in_memory.config, 0)

        def step(self, event: dict[str, Any]) -> dict[str, Any]:
            return super().step(event)  # overridden, so that the replayer goes through handle()

        def handle(self, event: dict[str, Any]):
            outcome = super().handle(event)
            if event["kind"] == "failover":
                old, directory = self.controller, self.directory
                assert old is not None and directory is not None  # start() made both, before any event
                old.close()
                reopened = self.controller = Controller.open(directory, old.config, old.now_ms)
                reopened.next_seq = old.next_seq
            return outcome

        def close(self) -> None:
            if self.controller is not None:
                self.controller.close()
            if self.directory is not None:
                shutil.rmtree(self.directory, ignore_errors=True)
            super().close()

    return ImplOnDisk


def _rerecorded_differs(trace) -> str | None:
    """What CI's corpus test asks of the model: each trace, recorded again from its events, is the
    same, line for line (responses, records, committed state and the rules fired); the first
    line that differs, or None."""
    from .targeted import rerecorded

    again = rerecorded(trace).lines()
    expected = trace.lines()
    for n, (line, was) in enumerate(zip(again, expected, strict=False)):
        if line != was:
            return f"line {n + 1} recorded again differs"
    return None if len(again) == len(expected) else "recorded again, it has another length"


def run_corpus(traces, package: str) -> tuple[str, str] | None:
    """The corpus against impl (``package`` impl: replayed at level records in memory, then with
    its log on disk, recovered from it at every failover) or against the model (each trace
    recorded again must be the same, rules fired included); the first divergence as (trace,
    what), or None."""
    from .adapters import ImplAdapter
    from .replay import replay

    if package != "impl":
        for where, trace in traces:
            try:
                differs = _rerecorded_differs(trace)
            except MutantTimeout:
                raise
            except Exception as crash:  # noqa: BLE001 - a broken model may raise anywhere: a kill
                return where, f"crash: {_first_line(crash)}"
            if differs:
                return where, differs
        return None
    makes = (ImplAdapter, _impl_on_disk())
    for where, trace in traces:
        for make in makes:
            on = "" if make is ImplAdapter else ", log on disk"
            try:
                verdict = replay(trace, make(), "records")
            except MutantTimeout:
                raise
            except Exception as crash:  # noqa: BLE001 - a broken implementation may raise anywhere: a kill
                return where, f"crash{on}: {_first_line(crash)}"
            if not verdict.passed:
                # ImplAdapter reports every level and implements every profile (read() refuses an unknown
                # one): a trace it does not pass is one it diverges from, never one it does not support
                assert verdict.divergence is not None, verdict.not_supported
                return where, f"step {verdict.divergence.step} ({verdict.divergence.part}{on})"
    return None


def _first_line(failure: BaseException) -> str:
    text = str(failure).strip().splitlines()
    return f"{type(failure).__name__}: {text[0] if text else ''}"[:200]


def _alarm(seconds: float):
    def ring(signum, frame):
        raise MutantTimeout()

    signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def _quiet_alarm():
    signal.setitimer(signal.ITIMER_REAL, 0)


@frozen
class Outcome:
    """What one mutant did to the two checks: ``killed``, ``survived``, ``timeout``, ``crash``,
    ``unreached`` (not run), ``void`` (the unmutated check failed), ``error`` (could not be applied)."""

    corpus: str
    corpus_detail: str
    stateful: str
    stateful_detail: str
    seconds: float


def _check(run: Callable[[], Any], timeout: float) -> tuple[str, str]:
    _alarm(timeout)
    try:
        found = run()
    except MutantTimeout:
        return "timeout", f"no end within {timeout:.0f}s"
    except MemoryError:
        return "crash", "MemoryError"
    finally:
        _quiet_alarm()
    if found is None:
        return "survived", ""
    return "killed", found if isinstance(found, str) else " ".join(found)


def _forget_caches() -> None:
    """Empty impl's module-level caches (the shared broker lists, and the functions that keep their
    answers, with functools), so that each mutant meets them as a fresh process would: filled by
    earlier runs, a cache would hide a mutant of the function that fills it, and the lines that fill
    it would look unreached."""
    from kraftspec.impl import replication

    replication._BROKER_LISTS.clear()
    for name, module in list(sys.modules.items()):
        if name.startswith("kraftspec.impl.") and module is not None:
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)) and getattr(value, "__module__", None) == name:
                    value.cache_clear()


def check_mutant(mutant: SweepMutant, source: str, traces, examples: int, timeout: float, stateful: bool) -> Outcome:
    """Apply ``mutant`` and run both checks (the stateful one only when ``stateful``)."""
    started = time.perf_counter()
    _forget_caches()
    try:
        context = applied(mutant, source)
        context.__enter__()
    except Exception as problem:  # noqa: BLE001 - a mutant that does not compile is reported, not fatal
        detail = _first_line(problem)
        return Outcome("error", detail, "error", detail, time.perf_counter() - started)
    try:
        corpus = _check(lambda: run_corpus(traces, mutant.package), timeout)
        state = _check(lambda: run_stateful(examples), timeout) if stateful else ("void", "the unmutated run failed")
    finally:
        context.__exit__(None, None, None)
    return Outcome(*corpus, *state, time.perf_counter() - started)


# ---- what the checks reach -------------------------------------------------------------------


def reached_lines(paths: Iterable[str], traces, examples: int, stateful: bool) -> dict[str, set[int]]:
    """The lines of ``paths`` that the unmutated checks execute."""
    files = {str(REPOSITORY / p): p for p in paths}
    lines: dict[str, set[int]] = {p: set() for p in files.values()}

    def local(frame, event, arg):
        if event == "line":
            lines[files[frame.f_code.co_filename]].add(frame.f_lineno)
        return local

    def global_(frame, event, arg):
        return local if frame.f_code.co_filename in files else None

    _forget_caches()  # else the lines that fill them would look unreached
    sys.settrace(global_)
    try:
        run_corpus(traces, "impl")
        run_corpus(traces, "model")
        if stateful:
            run_stateful(examples)
    finally:
        sys.settrace(None)
    return lines


# ---- equivalents -----------------------------------------------------------------------------


@frozen
class Equivalent:
    id: str
    change: str
    reason: str


def read_equivalents(path: str | Path = EQUIVALENTS) -> list[Equivalent]:
    """The mutants judged equivalent, each with its reason: ``[[equivalent]]`` tables of a TOML file."""
    path = Path(path)
    if not path.exists():
        return []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as problem:
        raise ValueError(f"{path}: {problem}") from None
    found = []
    for n, entry in enumerate(data.get("equivalent", []), 1):
        missing = [key for key in ("id", "change", "reason") if not str(entry.get(key, "")).strip()]
        if missing:
            raise ValueError(f"{path}: equivalent entry {n} ({entry.get('id', 'no id')}): missing {', '.join(missing)}")
        found.append(Equivalent(entry["id"], entry["change"], entry["reason"]))
    return found


# ---- the sweep -----------------------------------------------------------------------------


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:16]


def _function_source(mutant: SweepMutant, source: str) -> str:
    return ast.unparse(_function_node(ast.parse(source), mutant.qualname))


_worker: dict[str, Any] = {}


def _start_worker(traces, sources, examples, timeout, stateful) -> None:
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    except (ValueError, OSError):
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    _worker.update(traces=traces, sources=sources, examples=examples, timeout=timeout, stateful=stateful)


def _work(mutant: SweepMutant, stateful: bool = True) -> tuple[SweepMutant, Outcome]:
    import faulthandler

    w = _worker
    # a watchdog for a mutant that outlives both checks' time limits (stuck where the alarm cannot
    # interrupt it, or swallowing it): the worker exits, printing where it was, and the mutant is
    # tried once more, then counted as a crash
    faulthandler.dump_traceback_later(2 * w["timeout"] + 60, exit=True)
    try:
        return mutant, check_mutant(mutant, w["sources"][mutant.path], w["traces"], w["examples"], w["timeout"],
                                    w["stateful"] and stateful)
    finally:
        faulthandler.cancel_dump_traceback_later()


@frozen
class SweepResult:
    mutant: SweepMutant
    outcome: Outcome
    fingerprint: str  # of everything both columns depend on
    stateful_print: str = ""  # of what the stateful column alone depends on: kept when only the corpus changed

    @property
    def corpus_killed(self) -> bool:
        return self.outcome.corpus in ("killed", "timeout", "crash")

    @property
    def stateful_killed(self) -> bool:
        return self.outcome.stateful in ("killed", "timeout", "crash")

    @property
    def killed(self) -> bool:
        return self.corpus_killed or self.stateful_killed

    def to_json(self) -> dict[str, Any]:
        return {"id": self.mutant.id, "mutant": asdict(self.mutant), "outcome": asdict(self.outcome),
                "fingerprint": self.fingerprint, "stateful_print": self.stateful_print}

    @staticmethod
    def from_json(data: dict[str, Any]) -> SweepResult:
        return SweepResult(SweepMutant(**data["mutant"]), Outcome(**data["outcome"]), data["fingerprint"],
                           data.get("stateful_print", ""))


def read_results(path: Path) -> dict[str, SweepResult]:
    """The results written so far, by mutant id (the last line of an id wins; a torn last line is ignored)."""
    found: dict[str, SweepResult] = {}
    if not path.exists():
        return found
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            result = SweepResult.from_json(json.loads(line))
        except (ValueError, KeyError, TypeError):
            continue  # a line cut short by a crash, or from another version of this tool
        found[result.mutant.id] = result
    return found


@frozen
class SweepReport:
    results: tuple[SweepResult, ...]
    generated: int
    equivalents: tuple[Equivalent, ...]
    stale_equivalents: tuple[Equivalent, ...]
    corpus_source: str
    corpus_excluded: tuple[str, ...]
    stateful_baseline: str
    examples: int
    untested: int  # mutants left for another run (the time budget ran out)
    reused: int
    seconds: float
    command: str = ""

    @property
    def equivalent_ids(self) -> dict[str, Equivalent]:
        return {e.id: e for e in self.equivalents}

    def classify(self, result: SweepResult) -> str:
        """killed, survived, unreached, equivalent, wrongly-equivalent (listed, but killed), error."""
        listed = self.equivalent_ids.get(result.mutant.id)
        if result.outcome.corpus == "error":
            return "error"
        if listed is not None:
            return "wrongly-equivalent" if result.killed else "equivalent"
        if result.killed:
            return "killed"
        return "unreached" if result.outcome.corpus == "unreached" else "survived"

    def counts(self) -> dict[str, Any]:
        kinds = Counter(self.classify(r) for r in self.results)
        counted = [r for r in self.results if self.classify(r) in ("killed", "survived", "unreached", "wrongly-equivalent")]
        corpus = sum(r.corpus_killed for r in counted)
        stateful = sum(r.stateful_killed for r in counted)
        either = sum(r.killed for r in counted)
        total = len(counted)
        reached = total - kinds["unreached"]
        return {
            "generated": self.generated, "tested": len(self.results), "untested": self.untested,
            "equivalent": kinds["equivalent"], "wrongly_equivalent": kinds["wrongly-equivalent"], "error": kinds["error"],
            "non_equivalent": total, "unreached": kinds["unreached"],
            "killed_by_corpus": corpus, "killed_by_stateful": stateful, "killed_by_either": either,
            "survivors": total - either,
            "kill_rate": either / total if total else None,
            "kill_rate_reached": either / reached if reached else None,
        }

    def survivors(self) -> list[SweepResult]:
        return [r for r in self.results if self.classify(r) in ("survived", "unreached")]

    def table(self) -> str:
        c = self.counts()

        def pct(x):
            return "-" if x is None else f"{100 * x:.1f}%"

        total = c["non_equivalent"] or 1
        by_file: dict[str, Counter] = {}
        for r in self.results:
            by_file.setdefault(r.mutant.path, Counter())[self.classify(r)] += 1
        lines = [f"{'file':28} {'mutants':>8} {'killed':>7} {'survived':>9} {'unreached':>10} {'equivalent':>11}"]
        for path, k in sorted(by_file.items()):
            lines.append(f"{path:28} {sum(k.values()):>8} {k['killed'] + k['wrongly-equivalent']:>7} {k['survived']:>9} "
                         f"{k['unreached']:>10} {k['equivalent']:>11}")
        lines += [
            "",
            f"corpus:   {self.corpus_source}" + (f"; left out: {'; '.join(self.corpus_excluded)}" if self.corpus_excluded else ""),
            f"stateful: tests/test_stateful.py machine, {self.examples} derandomized sequences of {STEPS} events; "
            f"unmutated run {self.stateful_baseline}",
            "",
            f"mutants generated:          {c['generated']}" + (f" ({c['untested']} not tested yet: run again to continue)" if c["untested"] else ""),
            f"equivalent (listed):        {c['equivalent']}",
            f"non-equivalent:             {c['non_equivalent']}",
            f"killed by the corpus:       {c['killed_by_corpus']} ({pct(c['killed_by_corpus'] / total)})",
            f"killed by the stateful run: {c['killed_by_stateful']} ({pct(c['killed_by_stateful'] / total)})",
            f"killed by either:           {c['killed_by_either']} ({pct(c['kill_rate'])})",
            f"survivors:                  {c['survivors']} (of which {c['unreached']} on lines neither check executes)",
        ]
        if c["error"]:
            lines.append(f"not applicable:             {c['error']} (could not be compiled alone)")
        wrong = [r for r in self.results if self.classify(r) == "wrongly-equivalent"]
        for r in wrong:
            lines.append(f"listed as equivalent but killed: {r.mutant.describe()}")
        for e in self.stale_equivalents:
            lines.append(f"equivalent entry names no current mutant: {e.id} ({e.change})")
        survivors = self.survivors()
        if survivors:
            lines += ["", "survivors:"]
            for r in survivors:
                lines.append(f"  {r.mutant.describe()}" + ("  [unreached]" if r.outcome.corpus == "unreached" else ""))
        lines.append(f"\n{len(self.results) - self.reused} mutants tested in {self.seconds:.0f}s ({self.reused} results reused)")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "counts": self.counts(),
            "corpus": {"source": self.corpus_source, "excluded": list(self.corpus_excluded)},
            "stateful": {"examples": self.examples, "steps": STEPS, "baseline": self.stateful_baseline},
            "equivalents": [asdict(e) for e in self.equivalents],
            "stale_equivalents": [asdict(e) for e in self.stale_equivalents],
            "mutants": [{**r.to_json(), "class": self.classify(r)} for r in self.results],
            "seconds": round(self.seconds, 1),
        }

    def junit(self) -> str:
        """JUnit XML: one test case per mutant; a survivor is a failure, an equivalent one skipped."""
        survivors = self.survivors()
        suite = ET.Element("testsuite", {"name": "kraftspec.mutation.sweep", "tests": str(len(self.results)),
                                          "failures": str(len(survivors)), "errors": "0",
                                          "skipped": str(sum(self.classify(r) == "equivalent" for r in self.results)),
                                          "time": f"{self.seconds:.1f}"})
        for r in self.results:
            case = ET.SubElement(suite, "testcase", {"classname": f"kraftspec.mutation.{r.mutant.path}", "name": r.mutant.id,
                                                     "time": f"{r.outcome.seconds:.3f}"})
            kind = self.classify(r)
            text = (f"{r.mutant.describe()}\ncorpus: {r.outcome.corpus} {r.outcome.corpus_detail}\n"
                    f"stateful: {r.outcome.stateful} {r.outcome.stateful_detail}")
            if kind in ("survived", "unreached"):
                ET.SubElement(case, "failure", {"message": f"mutant {kind}: {r.mutant.change}", "type": kind}).text = text
            elif kind == "equivalent":
                ET.SubElement(case, "skipped", {"message": f"equivalent: {self.equivalent_ids[r.mutant.id].reason}"})
            ET.SubElement(case, "system-out").text = text
        root = ET.Element("testsuites")
        root.append(suite)
        ET.indent(root)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def sweep(
    paths: Iterable[str] = TARGETS,
    corpus: str | Path | None = CORPUS,
    examples: int = DEFAULT_EXAMPLES,
    jobs: int = DEFAULT_JOBS,
    budget_s: float | None = None,
    results_path: str | Path = DEFAULT_RESULTS,
    fresh: bool = False,
    equivalents_path: str | Path = EQUIVALENTS,
    timeout: float | None = None,
    progress: Callable[[str], None] | None = None,
    command: str = "",
) -> SweepReport:
    """Generate the mutants of ``paths`` and test each against the corpus and the stateful machine.

    Results are appended to ``results_path`` as they come, and reused from it (unless ``fresh``)
    when their fingerprint matches. ``budget_s``: stop starting new mutants after that many
    seconds (the rest are counted as untested). ``timeout``: seconds per check (default 20 times
    the unmutated run, at least 30)."""
    started = time.perf_counter()
    say = progress or (lambda line: None)
    paths = list(paths)
    listed = read_equivalents(equivalents_path)
    sources = {p: source_of(p) for p in paths}
    mutants = [m for p in paths for m in mutants_of(p, sources[p])]
    by_id = {m.id: m for m in mutants}
    swept = [e for e in listed if e.id.split(":", 1)[0] in sources]  # the entries of other files wait for their sweep
    stale = tuple(e for e in swept if e.id not in by_id or by_id[e.id].change != e.change)
    equivalents = tuple(e for e in swept if e not in stale)

    traces, excluded, corpus_source, _ = corpus_traces(corpus)
    kept = []
    for where, trace in traces:
        diverges = run_corpus([(where, trace)], "impl") or run_corpus([(where, trace)], "model")
        if diverges:
            excluded.append(f"{Path(where).name} (unmutated: {diverges[1]})")
        else:
            kept.append((where, trace))
    traces = kept
    clock = time.perf_counter()
    baseline_failure = run_stateful(examples)
    baseline_seconds = time.perf_counter() - clock
    stateful_ok = baseline_failure is None
    baseline = "passed" if stateful_ok else f"failed ({baseline_failure})"
    say(f"{len(mutants)} mutants in {len(paths)} files; corpus {len(traces)} traces; "
        f"unmutated stateful run {baseline} in {baseline_seconds:.1f}s")
    timeout = timeout or max(MIN_TIMEOUT_S, 20 * baseline_seconds)

    corpus_digest = _digest(CORPUS_CHECK, *sorted(trace.name for _, trace in traces))
    stateful_digest = _digest((REPOSITORY / "tests" / "test_stateful.py").read_bytes(), str(examples), str(stateful_ok))
    function_sources: dict[tuple[str, str], str] = {}

    def fingerprints(m: SweepMutant) -> tuple[str, str]:
        """(of both columns, of the stateful column alone)"""
        key = (m.path, m.qualname)
        if key not in function_sources:
            function_sources[key] = _function_source(m, sources[m.path])
        return (_digest(m.id, m.change, function_sources[key], corpus_digest, stateful_digest),
                _digest(m.id, m.change, function_sources[key], stateful_digest))

    results_path = Path(results_path)
    results_path.parent.mkdir(parents=True, exist_ok=True)
    earlier = {} if fresh else read_results(results_path)
    done: dict[str, SweepResult] = {}
    todo = []
    kept_stateful: dict[str, SweepResult] = {}  # only the corpus changed since: its column alone is run again
    for m in mutants:
        print_, stateful_print = fingerprints(m)
        old = earlier.get(m.id)
        if old is not None and old.mutant == m and old.fingerprint == print_:
            done[m.id] = old
            continue
        if (old is not None and old.mutant == m and old.stateful_print == stateful_print
                and old.outcome.stateful not in ("unreached", "error")):
            kept_stateful[m.id] = old
        todo.append((m, (print_, stateful_print)))
    reused = len(done)

    say("recording the lines the unmutated checks execute")
    reached = reached_lines(paths, traces, examples, stateful_ok)
    out = results_path.open("w" if fresh else "a", encoding="utf-8")

    def record(result: SweepResult) -> None:
        done[result.mutant.id] = result
        out.write(json.dumps(result.to_json()) + "\n")
        out.flush()
        os.fsync(out.fileno())

    runnable = []
    for m, both_prints in todo:
        if reached[m.path].isdisjoint(range(m.statement_line, m.end_line + 1)):
            record(SweepResult(m, Outcome("unreached", "", "unreached", "", 0.0), *both_prints))
        else:
            runnable.append((m, both_prints))
    corpus_only = sum(m.id in kept_stateful for m, _ in runnable)
    say(f"{reused} results reused, {len(todo) - len(runnable)} unreached, {len(runnable)} to run on {jobs} workers"
        + (f" ({corpus_only} against the changed corpus only)" if corpus_only else "")
        + f" (time limit {timeout:.0f}s a check)")

    def result_of(m: SweepMutant, outcome: Outcome) -> SweepResult:
        old = kept_stateful.get(m.id)
        if old is not None:
            outcome = Outcome(outcome.corpus, outcome.corpus_detail, old.outcome.stateful, old.outcome.stateful_detail,
                              outcome.seconds)
        return SweepResult(m, outcome, *prints[m.id])

    prints = dict((m.id, p) for m, p in runnable)
    queue = [m for m, _ in runnable]
    queue.reverse()
    tested = 0
    run_started = time.perf_counter()
    last_said = 0.0
    killed_now = 0

    def report_progress(force: bool = False) -> None:
        nonlocal last_said
        now = time.perf_counter()
        if not force and now - last_said < 10:
            return
        last_said = now
        elapsed = now - run_started
        left = len(queue) + len(in_flight)
        rate = tested / elapsed if elapsed else 0
        eta = left / rate if rate else float("inf")
        finish = time.strftime("%H:%M", time.localtime(time.time() + eta)) if rate else "?"
        say(f"{tested}/{len(runnable)} mutants, {killed_now} killed, {tested - killed_now} survived; "
            f"{rate * 60:.0f}/min, about {eta / 60:.0f} min left (done at {finish})")

    in_flight: dict[Any, SweepMutant] = {}
    retried: set[str] = set()
    stopped_by_budget = False
    context = __import__("multiprocessing").get_context("fork")
    initargs = (traces, sources, examples, timeout, stateful_ok)
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_start_worker, initargs=initargs)
    try:
        while queue or in_flight:
            while queue and len(in_flight) < 2 * jobs:
                if budget_s is not None and time.perf_counter() - started > budget_s:
                    stopped_by_budget = True
                    break
                m = queue.pop()
                in_flight[pool.submit(_work, m, m.id not in kept_stateful)] = m
            if not in_flight:
                break
            finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            broken = []
            for future in finished:
                m = in_flight.pop(future)
                try:
                    _, outcome = future.result()
                except BrokenProcessPool:
                    broken.append(m)
                    continue
                result = result_of(m, outcome)
                record(result)
                tested += 1
                killed_now += result.killed
            if broken or any(f.done() and f.exception() is not None for f in in_flight):
                broken += list(in_flight.values())
                in_flight.clear()
                pool.shutdown(wait=True, cancel_futures=True)
                pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_start_worker, initargs=initargs)
                for m in broken:  # each again, alone: a second crash is the mutant's own
                    if m.id in retried:
                        record(result_of(m, Outcome("crash", "the worker process died", "crash", "the worker process died", 0.0)))
                        tested += 1
                        killed_now += 1
                    else:
                        retried.add(m.id)
                        queue.append(m)
            report_progress()
            if stopped_by_budget and not in_flight:
                break
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        out.close()
    report_progress(force=True)
    ordered = tuple(done[m.id] for m in mutants if m.id in done)
    return SweepReport(ordered, len(mutants), equivalents, stale, corpus_source, tuple(excluded), baseline, examples,
                       len(mutants) - len(ordered), reused, time.perf_counter() - started, command)


def sweepable(path: str) -> str | None:
    """Why ``path`` cannot be swept (None if it can): it must be a Python file of impl/ or model/."""
    if not path.endswith(".py") or path.split("/", 1)[0] not in ("impl", "model") or path.count("/") != 1:
        return "expected a Python file of impl/ or model/, relative to the repository, such as impl/replication.py"
    if not (REPOSITORY / path).is_file():
        return f"no such file in {REPOSITORY}"
    return None
