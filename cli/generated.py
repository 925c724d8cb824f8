"""Functions written at run time, and their compiled equivalents.

Some of kraftspec's functions are written as source text when a class is made or first used, and
then run: impl's message classes and codecs (from the schemas), the model state's copiers (from a
class's fields), the JSON converters of the conformance traces; and attrs writes the ``__init__``
and ``__eq__`` of every attrs class the same way. Even in a compiled build (kraftspec.compiled)
such a function runs in the interpreter, and a conform trace calls them some 1,300 times.

``define`` is how kraftspec runs such a source, in place of ``exec``: with the source kept for
tracebacks, and with a compiled equivalent where the build has one. ``kraftspec compile`` collects
(``collected``) the source of every such function that a short run of the conformance job, in
every profile, writes and calls often (three times a trace or more: four calls in five), with the
names it reads from the namespace it runs in; the others, thousands of lines of codecs and
converters that the job seldom or never calls, would make the build minutes slower for little. It
compiles each into a factory that binds those names as the namespace holds them and returns the
same functions, compiled (``factory_module``). A process that loads the build
(KRAFTSPEC_COMPILED=1) installs the factories (``install``); from then on ``define`` looks each
source up by its SHA-256, and ``adopt`` does the same for the attrs classes of each compiled module
as it is imported.

A function is compiled only where its compiled form returns what exec's would, and raises the same
exceptions (a message about its arguments may be worded otherwise):
* it is found by the exact text of its source, so a source written otherwise (another schema,
  another attrs release) simply runs as before;
* every name it reads that is not a builtin is in its namespace when it is defined, and was still
  bound to the same object at the end of the collecting run (no generator here rebinds one): the
  compiled function reads those names once, when it is made, where exec's reads them at each call;
* where a namespace lacks one of them, or holds one by a builtin's name, the source runs with exec.
attrs's ``__hash__`` is left as attrs writes it: its source holds a number that depends on the
process's hash seed; compiled with that number taken out of its text, it saved nothing measurable
(counted with callgrind: a conform trace, 18.50 million instructions either way), since all it does
is build a tuple and hash it. tests/test_generated.py and tests/test_compiled.py check all this.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import linecache
import symtable
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

ATTRS_METHODS = ("__init__", "__eq__")  # attrs-written methods compiled (not __hash__: see above)

_factories: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}
_collected: list[tuple[str, tuple[str, ...], dict[str, Any], dict[str, Any], set[Any]]] | None = None
_used = 0


def key(source: str) -> str:
    """The name a source is known by in a build: its SHA-256, in hex."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def define(source: str, namespace: dict[str, Any], label: str) -> None:
    """Run ``source`` (function definitions) in ``namespace``, as ``exec(source, namespace)``
    does; ``label`` names it in tracebacks. Compiled, where the build has this source."""
    global _used
    digest = key(source)
    factory = _factories.get(digest)
    if factory is not None:
        try:
            made = factory(namespace)
        except KeyError:  # a name the compiled functions read is not there: run the source
            pass
        else:
            namespace.update(made)
            _used += 1
            return
    filename = f"<kraftspec generated {label} {digest[:12]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # tracebacks show it
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - source that kraftspec wrote
    if _collected is not None:
        _note(source, namespace)


def adopt(module: Any) -> int:
    """Give each attrs class that ``module`` defines the compiled ``__init__`` and ``__eq__`` the
    build has for the source attrs wrote for it; how many methods were replaced."""
    global _used
    replaced = 0
    if not _factories:
        return 0
    for cls in _attrs_classes(module):
        for name, source, namespace in _attrs_methods(cls):
            factory = _factories.get(key(source))
            if factory is None:
                continue
            try:
                made = factory(namespace)
            except KeyError:
                continue
            setattr(cls, name, made[name])
            replaced += 1
    _used += replaced
    return replaced


def install(factories: dict[str, Callable[[dict[str, Any]], dict[str, Any]]]) -> None:
    """Use these compiled factories (by source key) from now on."""
    _factories.update(factories)


def compiled_count() -> int:
    """How many generated sources and attrs methods this process runs compiled."""
    return _used


def _attrs_classes(module: Any) -> list[type]:
    """The attrs classes that ``module`` defines."""
    return [value for value in list(vars(module).values())
            if isinstance(value, type) and value.__module__ == module.__name__ and hasattr(value, "__attrs_attrs__")]


def _attrs_methods(cls: type) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, source, namespace) of each of ATTRS_METHODS that attrs wrote for ``cls``. attrs
    writes each at the left margin, and its body indented, so a method's source runs from its
    ``def`` line to the next line at the margin (read so, not parsed: this runs at every import of a
    compiled module, and parsing took a third of the import's time)."""
    found = []
    for name in ATTRS_METHODS:
        function = cls.__dict__.get(name)
        code = getattr(function, "__code__", None)
        if code is None or not code.co_filename.startswith("<attrs generated"):
            continue
        lines = linecache.getlines(code.co_filename)
        start = next((n for n, line in enumerate(lines) if line.startswith(f"def {name}(")), None)
        if start is None:
            continue
        end = next((n for n in range(start + 1, len(lines)) if lines[n][:1] not in ("", " ", "\t", "\n")), len(lines))
        found.append((name, "".join(lines[start:end]), function.__globals__))  # type: ignore[union-attr]
    return found


# ---- collecting and compiling (kraftspec compile) ---------------------------------------------------


def free_names(source: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names ``source`` reads from its namespace (not those it defines), and those it
    defines at its top level."""
    top = symtable.symtable(source, "<generated>", "exec")
    defined = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    read: set[str] = set()

    def visit(table: symtable.SymbolTable) -> None:
        for symbol in table.get_symbols():
            if table is top and symbol.is_referenced() or table is not top and symbol.is_global():
                read.add(symbol.get_name())
        for child in table.get_children():
            visit(child)

    visit(top)
    return tuple(sorted(read - defined)), tuple(sorted(defined))


def _note(source: str, namespace: dict[str, Any]) -> None:
    assert _collected is not None
    names, defined = free_names(source)
    bound = {n: namespace[n] for n in names if n in namespace}
    codes = {namespace[d].__code__ for d in defined if hasattr(namespace.get(d), "__code__")}
    _collected.append((source, names, namespace, bound, codes))


def start_collecting() -> None:
    """From now on, keep every source ``define`` runs (before the modules that write them are
    imported)."""
    global _collected
    _collected = []


def collected(modules: Iterable[Any], called: Counter[Any] | None = None, at_least: int = 1) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The sources fit to compile, by key, each with the names it reads from its namespace: those
    ``define`` ran since ``start_collecting``, and the attrs methods of the classes defined in
    ``modules``; if ``called`` is given (calls by code object), only those whose functions were
    called ``at_least`` times in all. A source is fit when every name it reads is in its
    namespace, still bound as it was when the source ran, or else is a builtin."""
    assert _collected is not None, "start_collecting() first"
    items = list(_collected)
    for module in modules:
        for cls in _attrs_classes(module):
            for name, source, namespace in _attrs_methods(cls):
                names, _ = free_names(source)
                bound = {n: namespace[n] for n in names if n in namespace}
                items.append((source, names, namespace, bound, {getattr(cls, name).__code__}))
    fit: dict[str, tuple[str, tuple[str, ...]]] = {}
    for source, names, namespace, bound, codes in items:
        if called is not None and sum(called[code] for code in codes) < at_least:
            continue
        if all(n in bound and namespace.get(n) is bound[n] or n not in bound and hasattr(builtins, n) for n in names):
            fit[key(source)] = (source, tuple(sorted(bound)))
    return fit


def calls() -> tuple[Counter[Any], Callable[..., None]]:
    """A counter, and a profile function (``sys.setprofile``) that counts in it the calls of
    every Python function, by its code."""
    called: Counter[Any] = Counter()

    def profile(frame, event, arg) -> None:
        if event == "call":
            called[frame.f_code] += 1

    return called, profile


def factory_module(sources: dict[str, tuple[str, tuple[str, ...]]]) -> str:
    """The source of a module for Cython to compile: for each source (by key, with the names it
    reads from its namespace), a factory that takes a namespace, binds those names as it holds
    them, runs the source's statements and returns what they define, by name; and ``FACTORIES``,
    the factories by key. A name the source reads as a builtin is left to Cython, which calls most
    builtins directly: the factory refuses (KeyError) a namespace that holds one by that name."""
    body: list[ast.stmt] = [ast.Expr(ast.Constant("Written by kraftspec compile (kraftspec.generated) for one build: do not edit."))]
    table = []
    for number, (digest, (source, bound)) in enumerate(sorted(sources.items())):
        names, defined = free_names(source)
        refused = [n for n in names if n not in bound]
        checks = ast.parse("".join(f"if {n!r} in namespace:\n    raise KeyError({n!r})\n" for n in refused)).body
        binds = ast.parse("".join(f"{n} = namespace[{n!r}]\n" for n in bound)).body
        made = ast.Return(ast.Dict([ast.Constant(d) for d in defined], [ast.Name(d, ast.Load()) for d in defined]))
        arguments = ast.arguments(posonlyargs=[], args=[ast.arg("namespace")], kwonlyargs=[], kw_defaults=[], defaults=[])
        body.append(ast.FunctionDef(f"_factory_{number}", arguments, [*checks, *binds, *ast.parse(source).body, made], [], None))
        table.append(f"{digest!r}: _factory_{number}")
    body += ast.parse("FACTORIES = {" + ", ".join(table) + "}\n").body
    return ast.unparse(ast.fix_missing_locations(ast.Module(body, []))) + "\n"
