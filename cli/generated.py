"""Functions written at run time, and their compiled equivalents.

Some of kraftspec's functions are written as source text when a class is made or first used, and
then run: impl's message classes and codecs (from the schemas), the model state's copiers (from a
class's fields), the JSON converters of the conformance traces; and attrs writes the ``__init__``
and ``__eq__`` of every attrs class the same way. Even in a compiled build (kraftspec.compiled)
such a function runs in the interpreter, and a conform trace calls them some 1,300 times.

``define`` is how kraftspec runs such a source, in place of ``exec``: with the source kept for
tracebacks, and with a compiled equivalent where the build has one. ``kraftspec compile`` collects
(``collected``) the source of every such function that a short run of the conformance job, in
every profile, and of impl's request paths that ``kraftspec bench`` times, writes and calls often
(three times a conform trace or more: four calls in five, and what a fencing calls per
partition), with the names it reads from the namespace it runs in; the others, thousands of lines
of codecs and converters that the job seldom or never calls, would make the build minutes slower
for little. It compiles each into a factory that binds those names as the namespace holds them and returns the
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
is build a tuple and hash it.

Where a source sets an attribute through a bound wrapper of one of CPython's own setters, which
compiled code calls as it calls any object (a tuple of arguments made and unpacked at every call,
some eighty times an event), its factory calls the C function the wrapper calls (``SETTERS``):
* attrs's ``_setattr = _cached_setattr_get(self)`` and ``_setattr('name', value)``, in the
  ``__init__`` of a frozen class, become ``PyObject_GenericSetAttr(self, 'name', value)``, which
  is what ``object.__setattr__`` runs once it has checked that no class written in C between the
  instance's class and ``object`` sets attributes its own way (``adopt`` makes that check, once
  per class);
* the model state's copiers' ``_set_name(new, value)``, a slot's ``__set__``, become a call of the
  slot's own setter (its type's ``tp_descr_set``), which is what ``__set__`` runs;
* ``obj = _new(cls)``, ``_new`` being ``object.__new__`` (impl's messages' ``make``, the model
  state's copiers), becomes a call of the class's own allocation (its ``tp_new``, object's), which
  is what ``object.__new__`` runs once its checks pass; and each ``obj.name = value`` after it a
  call of that slot's own setter, which is what setting the attribute runs once the class's
  ``__setattr__`` (object's) has found the slot. The interpreter specializes such stores, and
  compiled code, which looks each one up by name, ran them no faster than it did.
The factory checks that the namespace holds such a wrapper there, and that the class allocates
and sets attributes as object does (``allocates_as_object_does``, ``slot_of``); else KeyError: the
source runs with exec. tests/test_generated.py and tests/test_compiled.py check all this.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import linecache
import symtable
import types
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

ATTRS_METHODS = ("__init__", "__eq__")  # attrs-written methods compiled (not __hash__: see above)
GETTER, SLOT, NEW = "object.__setattr__.__get__", "a slot's __set__", "object.__new__"
SETTERS = (GETTER, SLOT, NEW)
"""The setters (and the allocator) whose calls a factory makes directly (see above), as
``setter_kind`` names them."""
_METHOD_WRAPPER = types.MethodWrapperType  # the bound slot wrappers of classes written in C (object().__str__)
_OBJECT_SETATTR_GET = object.__setattr__.__get__
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement, not written in C
_ABSTRACT = 1 << 20  # Py_TPFLAGS_IS_ABSTRACT: a class with abstract methods, which object.__new__ refuses

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
            if name == "__init__" and not _sets_attributes_as_object_does(cls):
                continue  # a compiled __init__ skips the check object.__setattr__ makes
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


def setter_kind(value: Any) -> str | None:
    """Which of SETTERS ``value`` is, if any: ``object.__setattr__.__get__``, the bound ``__set__``
    of a slot's descriptor, or ``object.__new__``."""
    if value is object.__new__:
        return NEW
    if type(value) is not _METHOD_WRAPPER:
        return None
    if value == _OBJECT_SETATTR_GET:
        return GETTER
    if value.__name__ == "__set__" and type(value.__self__) is types.MemberDescriptorType:
        return SLOT
    return None


def _sets_attributes_as_object_does(cls: type) -> bool:
    """Whether ``object.__setattr__`` on an instance of ``cls`` is ``PyObject_GenericSetAttr``
    and no more: no class written in C between ``cls`` and ``object`` has a ``__setattr__`` of its
    own (which ``object.__setattr__`` refuses to skip)."""
    return all(c.__flags__ & _HEAP_TYPE or c.__dict__.get("__setattr__", object.__setattr__) is object.__setattr__
               for c in cls.__mro__)


def allocates_as_object_does(cls: Any) -> bool:
    """Whether ``object.__new__(cls)`` can only ever do what ``cls``'s own allocation does (its
    ``tp_new``, which is object's, called with no argument): a class, not abstract, whose
    ``__new__`` is object's (no class between it and ``object`` has one of its own)."""
    return isinstance(cls, type) and cls.__new__ is object.__new__ and not cls.__flags__ & _ABSTRACT


def slot_of(cls: type, name: str) -> Any:
    """The slot's descriptor whose setter ``instance.name = value`` calls on an instance of
    ``cls``, or None: where ``cls`` sets attributes as object does (``PyObject_GenericSetAttr``: its
    ``__setattr__`` is object's, and no class written in C between it and ``object`` has its own),
    the descriptor is the first one its method resolution order has by that name, if a slot's."""
    if getattr(cls, "__setattr__", None) is not object.__setattr__ or not _sets_attributes_as_object_does(cls):
        return None
    for c in cls.__mro__:
        if name in c.__dict__:
            found = c.__dict__[name]
            return found if type(found) is types.MemberDescriptorType else None
    return None


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


Collected = dict[str, tuple[str, tuple[str, ...], dict[str, str]]]
"""Sources by key: each source, the names it reads from its namespace, and the setters among them
(their ``setter_kind`` by name)."""


def collected(modules: Iterable[Any], called: Counter[Any] | None = None, at_least: int = 1) -> Collected:
    """The sources fit to compile, by key, each with the names it reads from its namespace and
    the setters among them: those ``define`` ran since ``start_collecting``, and the attrs methods
    of the classes defined in ``modules``; if ``called`` is given (calls by code object), only
    those whose functions were called ``at_least`` times in all. A source is fit when every name it
    reads is in its namespace, still bound as it was when the source ran, or else is a builtin."""
    assert _collected is not None, "start_collecting() first"
    items = list(_collected)
    for module in modules:
        for cls in _attrs_classes(module):
            for name, source, namespace in _attrs_methods(cls):
                names, _ = free_names(source)
                bound = {n: namespace[n] for n in names if n in namespace}
                items.append((source, names, namespace, bound, {getattr(cls, name).__code__}))
    fit: Collected = {}
    for source, names, namespace, bound, codes in items:
        if called is not None and sum(called[code] for code in codes) < at_least:
            continue
        if all(n in bound and namespace.get(n) is bound[n] or n not in bound and hasattr(builtins, n) for n in names):
            setters = {n: kind for n, value in sorted(bound.items()) if (kind := setter_kind(value)) is not None}
            fit[key(source)] = (source, tuple(sorted(bound)), setters)
    return fit


def calls() -> tuple[Counter[Any], Callable[..., None]]:
    """A counter, and a profile function (``sys.setprofile``) that counts in it the calls of
    every Python function, by its code."""
    called: Counter[Any] = Counter()

    def profile(frame, event, arg) -> None:
        if event == "call":
            called[frame.f_code] += 1

    return called, profile


def factory_module(sources: Collected, for_cython: bool = True) -> str:
    """The source of a module for Cython to compile: for each source (by key, with the names it
    reads from its namespace and the setters among them), a factory that takes a namespace, binds
    those names as it holds them, runs the source's statements and returns what they define, by
    name; and ``FACTORIES``, the factories by key. A name the source reads as a builtin is left to
    Cython, which calls most builtins directly: the factory refuses (KeyError) a namespace that
    holds one by that name. Calls of setters are rewritten (``_direct_setters``) to the C functions
    they call, which the module cimports; ``for_cython=False`` gives the module plain Python
    stand-ins for those instead (for tests, which run the module with exec)."""
    body: list[ast.stmt] = [ast.Expr(ast.Constant("Written by kraftspec compile (kraftspec.generated) for one build: do not edit.")),
                            *ast.parse(_CYTHON_SETTERS if for_cython else _PLAIN_SETTERS).body]
    table = []
    for number, (digest, (source, bound, setters)) in enumerate(sorted(sources.items())):
        names, defined = free_names(source)
        refused = [n for n in names if n not in bound]
        statements = ast.parse(source).body
        # a source that reads a name of the module's own is compiled as it is
        own = any(n.startswith("_kraftspec_") for n in names)
        slots, getters = (set(), set()) if own else _direct_setters(statements, setters)
        allocations, stores = (set(), {}) if own else _direct_allocations(statements, setters, bound)
        checks = ast.parse("".join(f"if {n!r} in namespace:\n    raise KeyError({n!r})\n" for n in refused)
                           + "".join(f"_kraftspec_setter({n!r}, namespace, {GETTER!r})\n" for n in sorted(getters))
                           + "".join(f"_kraftspec_setter({n!r}, namespace, {NEW!r})\n" for n in sorted({n for n, _ in allocations}))).body
        binds = ast.parse("".join(f"{n} = _kraftspec_setter({n!r}, namespace, {SLOT!r}).__self__\n" if n in slots else
                                  f"{n} = namespace[{n!r}]\n" for n in bound)
                          + "".join(f"_kraftspec_allocating({cls})\n" for cls in sorted({c for _, c in allocations}))
                          + "".join(f"{slot} = _kraftspec_slot({cls}, {attribute!r})\n" for slot, (cls, attribute) in stores.items())).body
        made = ast.Return(ast.Dict([ast.Constant(d) for d in defined], [ast.Name(d, ast.Load()) for d in defined]))
        arguments = ast.arguments(posonlyargs=[], args=[ast.arg("namespace")], kwonlyargs=[], kw_defaults=[], defaults=[])
        body.append(ast.FunctionDef(f"_factory_{number}", arguments, [*checks, *binds, *statements, made], [], None))
        table.append(f"{digest!r}: _factory_{number}")
    body += ast.parse("FACTORIES = {" + ", ".join(table) + "}\n").body
    return ast.unparse(ast.fix_missing_locations(ast.Module(body, []))) + "\n"


_SETTER_CHECK = """
from kraftspec.generated import allocates_as_object_does as _kraftspec_allocates, setter_kind as _kraftspec_setter_kind
from kraftspec.generated import slot_of as _kraftspec_slot_of

def _kraftspec_setter(name, namespace, kind):
    value = namespace[name]
    if _kraftspec_setter_kind(value) != kind:
        raise KeyError(name)
    return value

def _kraftspec_allocating(cls):
    if not _kraftspec_allocates(cls):
        raise KeyError(cls)

def _kraftspec_slot(cls, name):
    slot = _kraftspec_slot_of(cls, name)
    if slot is None:
        raise KeyError(name)
    return slot
"""
_CYTHON_SETTERS = """
import cython
from cython.cimports.cpython.object import PyObject, PyTypeObject
from cython.cimports.cpython.object import PyObject_GenericSetAttr as _kraftspec_setattr, Py_TYPE as _kraftspec_type

_kraftspec_no_arguments = ()

@cython.cfunc
@cython.inline
@cython.returns(cython.int)
@cython.exceptval(-1)
def _kraftspec_descr_set(descr, obj, value):
    return _kraftspec_type(descr).tp_descr_set(descr, obj, value)

@cython.cfunc
@cython.inline
def _kraftspec_new(cls):
    return cython.cast(cython.pointer(PyTypeObject), cls).tp_new(
        cython.cast(type, cls), cython.cast(cython.pointer(PyObject), _kraftspec_no_arguments), cython.NULL)
""" + _SETTER_CHECK
_PLAIN_SETTERS = """
_kraftspec_setattr = object.__setattr__
_kraftspec_new = object.__new__

def _kraftspec_descr_set(descr, obj, value):
    type(descr).__set__(descr, obj, value)
""" + _SETTER_CHECK


def _direct_setters(statements: list[ast.stmt], setters: dict[str, str]) -> tuple[set[str], set[str]]:
    """Rewrite, in place, the calls of ``setters`` in ``statements`` (a source's) to the C functions
    they call: ``slot(obj, value)``, ``slot`` a slot's ``__set__``, to ``_kraftspec_descr_set(slot,
    obj, value)`` (the factory binds ``slot`` to the descriptor itself); and in a function that
    does ``setter = getter(obj)`` once, ``getter`` being ``object.__setattr__.__get__`` and ``obj``
    a parameter never rebound, ``setter(name, value)`` to ``_kraftspec_setattr(obj, name, value)``,
    the assignment dropped. A setter used in any other way is left as it is. The slots and the
    getters rewritten."""
    uses: dict[str, list[ast.Name]] = {}
    calls: dict[int, ast.Call] = {}  # the calls with two positional arguments, by the id of their callee
    arguments = set()  # a setter's name that is also a parameter somewhere is left alone
    for node in ast.walk(ast.Module(statements, [])):
        if isinstance(node, ast.Name):
            uses.setdefault(node.id, []).append(node)
        elif isinstance(node, ast.arg):
            arguments.add(node.arg)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 2 and not node.keywords \
                and not any(isinstance(a, ast.Starred) for a in node.args):
            calls[id(node.func)] = node
    slots = {n for n, kind in setters.items() if kind == SLOT and n in uses and n not in arguments
             and all(isinstance(u.ctx, ast.Load) and id(u) in calls for u in uses[n])}
    for name in slots:
        for use in uses[name]:
            call = calls[id(use)]
            call.func, call.args = ast.Name("_kraftspec_descr_set", ast.Load()), [ast.Name(name, ast.Load()), *call.args]
    getters = set()
    for function in statements:
        if not isinstance(function, ast.FunctionDef):
            continue
        parameters = [a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)]
        for statement in list(function.body):
            match statement:
                case ast.Assign(targets=[ast.Name(id=setter)],
                                value=ast.Call(func=ast.Name(id=getter), args=[ast.Name(id=obj)], keywords=[])):
                    pass
                case _:
                    continue
            names = [n for n in ast.walk(function) if isinstance(n, ast.Name)]
            stored = [n.id for n in names if not isinstance(n.ctx, ast.Load)]
            called = [n for n in names if n.id == setter and isinstance(n.ctx, ast.Load)]
            # the setter made once, of a parameter never rebound, and only ever called
            if setters.get(getter) != GETTER or stored.count(setter) != 1 or setter in parameters \
                    or obj not in parameters or obj in stored or not all(id(n) in calls for n in called):
                continue
            for n in called:
                call = calls[id(n)]
                call.func, call.args = ast.Name("_kraftspec_setattr", ast.Load()), [ast.Name(obj, ast.Load()), *call.args]
            function.body.remove(statement)
            if not function.body:  # the __init__ of a class with no attributes: it only made the setter
                function.body.append(ast.Pass())
            getters.add(getter)
    return slots, getters


def _direct_allocations(statements: list[ast.stmt], setters: dict[str, str],
                        bound: Iterable[str]) -> tuple[set[tuple[str, str]], dict[str, tuple[str, str]]]:
    """Rewrite, in place, in a function whose body does ``obj = new(cls)`` once, ``new`` being
    ``object.__new__``, ``cls`` a name the factory binds and ``obj`` a name never rebound: that call
    to ``_kraftspec_new(cls)``, which calls the class's own allocation (its ``tp_new``, object's)
    without ``object.__new__``'s wrapper and checks; and each ``obj.name = value`` in the function to
    ``_kraftspec_descr_set(slot, obj, value)``, the slot's own setter, where ``slot`` is bound by
    the factory, once, to the descriptor that setting ``name`` on an instance of ``cls`` calls. The
    factory refuses (KeyError, so the source runs with exec) a namespace where ``new`` is not
    ``object.__new__``, or ``cls`` not a class that ``allocates_as_object_does``, or ``name`` not a
    slot that ``slot_of`` finds. The (allocator, class) pairs rewritten, and the slots' names with
    their (class, attribute)."""
    bound = set(bound)
    allocations: set[tuple[str, str]] = set()
    stores: dict[str, tuple[str, str]] = {}
    for function in statements:
        if not isinstance(function, ast.FunctionDef):
            continue
        arguments = {a.arg for a in ast.walk(function) if isinstance(a, ast.arg)}
        stored = [n.id for n in ast.walk(function) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)]
        for statement in function.body:
            match statement:
                case ast.Assign(targets=[ast.Name(id=obj)], value=ast.Call(func=ast.Name(id=new), args=[ast.Name(id=cls)], keywords=[]) as call):
                    pass
                case _:
                    continue
            if setters.get(new) != NEW or cls not in bound or cls in arguments or cls in stored \
                    or obj in arguments or stored.count(obj) != 1:
                continue
            call.func = ast.Name("_kraftspec_new", ast.Load())
            allocations.add((new, cls))
            _SlotStores(obj, cls, stores).visit(function)
    return allocations, stores


class _SlotStores(ast.NodeTransformer):
    """``obj.name = value`` to ``_kraftspec_descr_set(slot, obj, value)`` (see _direct_allocations)."""

    def __init__(self, obj: str, cls: str, stores: dict[str, tuple[str, str]]) -> None:
        self.obj, self.cls, self.stores = obj, cls, stores

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        self.generic_visit(node)
        match node:
            case ast.Assign(targets=[ast.Attribute(value=ast.Name(id=obj), attr=attribute)]) if obj == self.obj:
                slot = next((name for name, at in self.stores.items() if at == (self.cls, attribute)), None)
                if slot is None:
                    slot = f"_kraftspec_slot_{len(self.stores)}"
                    self.stores[slot] = (self.cls, attribute)
                call = ast.Call(ast.Name("_kraftspec_descr_set", ast.Load()),
                                [ast.Name(slot, ast.Load()), ast.Name(obj, ast.Load()), node.value], [])
                return ast.copy_location(ast.Expr(call), node)
        return node
