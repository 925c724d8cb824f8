"""Compiled modules: an optional, faster way to run the model, the walk generator and impl.

``kraftspec compile`` runs Cython over the very source files that the plain interpreter runs (the
modules of kraftspec.model and kraftspec.impl, and the walk generator's simulation), unchanged, and
keeps the extension modules it builds in a cache directory, under a key made of the Python version
and the bytes of every one of those sources. A process started with ``KRAFTSPEC_COMPILED=1`` loads
them in place of the plain modules, but only when a build exists for exactly the sources installed:
after any change to one of them, the build no longer matches, and kraftspec runs plain (saying so
once on standard error) until ``kraftspec compile`` is run again. Nothing else changes: the files
to read beside the spec stay the files that run, and a compiled run writes the same traces, byte
for byte, as a plain one (tests/test_compiled.py).

Beside some of impl's modules, and beside the walk generator's simulation and its faults, lies a
Cython declaration file (``impl/leases.pxd`` beside ``impl/leases.py``,
``conformance/simulation.pxd``, ``conformance/generate.pxd``, ...), which plain Python never reads.
It declares that module's slotted classes as extension types whose attributes are Python objects, as
their ``__slots__`` are, so that compiled code reads and writes them as fields of a C struct rather
than through a lookup by name; and, for the functions and methods of the request path, which of
their variables (and of the controller's and the state's attributes) hold one of impl's own objects
(the ``Controller``, a ``Lease``, a ``Partition``, ...), so that compiled code reaches that object's
fields and methods directly; and which of them only ever hold a dict, a list, a set, a tuple or
bytes (the indexes, the leases, the journal's open batch, a snapshot's frames), so that compiled
code calls that container's methods, or indexes and slices it, directly rather than through a lookup
by name; and, in the loops that read a snapshot's bytes, which variables are C integers (positions
and lengths within a batch, which are far below the C type's limits, so they hold the values plain
Python's ints would). Such a variable only ever holds an object impl made, of that class or
container (or None, checked as plain Python checks it: the build sets ``nonecheck``), so the
compiled code accepts and returns what the plain code does; only a test that put an object of
another class there (none does, compiled) would see a TypeError. The declaration files are part of
the build key, as the sources are. A function declared there must not hold a closure (a generator
expression, a lambda), which Cython does not compile in such functions: impl writes list
comprehensions there instead.

Some functions are in no source file: impl's message classes and codecs, the model state's copiers
and the traces' JSON converters are written as source text when a class is made or first used, and
attrs writes every attrs class's ``__init__`` and ``__eq__`` the same way. ``kraftspec compile``
also runs the conformance job briefly (plain, in every profile, at every level), collects each such
function that it writes and calls often, and compiles them into one more module
(``kraftspec._generated``); a compiled process then uses a compiled one wherever a source's text is
exactly one collected, and runs any other as before (kraftspec.generated says when a function may
be compiled this way). The key of a build also covers that module's writer and the releases of
attrs and Cython.

One thing is added to the C that Cython writes (``with_attribute_caches``): each place in it that
reads an attribute (``x = obj.name``) or sets one keeps a small cache of its own, as CPython's
interpreter does at each such place in its bytecode, of the type it last saw there, that type's
version tag and, when the attribute is a slot, the slot's offset; while an object of that type comes
by and the tag holds (CPython changes it whenever the type or a base is changed), the slot is read
or set directly, and otherwise the attribute is looked up as Cython's own code looks it up. Cython
reads every attribute through the type's generic lookup, which was some 14% of a compiled conform
trace's instructions; the caches took 10% of them away (tests/test_attribute_caches.py checks the
caches against plain Python on every way they could be wrong).

Nothing is compiled or loaded unless asked: without ``KRAFTSPEC_COMPILED=1`` every module is
plain Python, and the tools that rewrite the model's functions (the mutation checks) always run on
the plain modules.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.abc
import importlib.metadata
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from . import generated

ENABLE = "KRAFTSPEC_COMPILED"  # "1": load the compiled modules that match the sources
DIRECTORY = "KRAFTSPEC_COMPILED_DIR"  # where builds are kept (default: the user's cache directory)
PACKAGES = ("kraftspec.model", "kraftspec.impl")  # every module of these, __init__ excepted
MODULES = ("kraftspec.conformance.simulation", "kraftspec.conformance.generate", "kraftspec.conformance.adapters",
           "kraftspec.conformance.jsonform", "kraftspec.conformance.trace", "kraftspec.conformance.replay")
MANIFEST = "manifest.json"
GENERATED = "kraftspec._generated"  # the compiled equivalents of the functions written at run time (kraftspec.generated)


class CompileError(Exception):
    """Compiling cannot be done here; the message says what is missing and how to get it."""


def cache_root() -> Path:
    """Where builds are kept: $KRAFTSPEC_COMPILED_DIR, else $XDG_CACHE_HOME/kraftspec/compiled
    (~/.cache/kraftspec/compiled)."""
    if os.environ.get(DIRECTORY):
        return Path(os.environ[DIRECTORY])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kraftspec" / "compiled"


def sources() -> dict[str, Path]:
    """The modules compiled, by name, with their source files (found without importing them)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, package
        for location in spec.submodule_search_locations:
            for path in sorted(Path(location).glob("*.py")):
                if path.stem != "__init__":
                    found[f"{package}.{path.stem}"] = path
    for name in MODULES:  # located in their package's directory: finding their spec would import the package
        package, _, module = name.rpartition(".")
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, package
        found[name] = next(Path(location, f"{module}.py") for location in spec.submodule_search_locations
                           if Path(location, f"{module}.py").exists())
    return dict(sorted(found.items()))


def declarations(modules: dict[str, Path]) -> dict[str, Path]:
    """The Cython declaration files (``.pxd``) that lie beside the sources, by module name."""
    return {name: path.with_suffix(".pxd") for name, path in modules.items() if path.with_suffix(".pxd").exists()}


def build_key(modules: dict[str, Path]) -> str:
    """The build that fits these sources and their declaration files on this Python and these
    releases of attrs and Cython, built the way this file and kraftspec.generated build: a hash of
    them all."""
    digest = hashlib.sha256(f"{sys.implementation.cache_tag} {sysconfig.get_platform()}\n".encode())
    digest.update(Path(__file__).read_bytes())
    digest.update(Path(__file__).with_name("generated.py").read_bytes())
    digest.update(f"attrs {importlib.metadata.version('attrs')}\n".encode())  # the source of its classes' methods
    digest.update(f"Cython {_release('Cython')}\n".encode())  # the C that with_attribute_caches changes
    pxds = declarations(modules)
    for name, path in modules.items():
        digest.update(f"{name}\n".encode())
        digest.update(path.read_bytes())
        digest.update(b"\n")
        if name in pxds:
            digest.update(f"{name}.pxd\n".encode())
            digest.update(pxds[name].read_bytes())
            digest.update(b"\n")
    return digest.hexdigest()[:20]


def _release(distribution: str) -> str:
    """The installed release of ``distribution``, or "none"."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "none"


FIRST = {"kraftspec.impl": "kraftspec.impl.controller"}
"""Compiled, a package's module to import as soon as the package is: impl's handler modules declare
(in their .pxd) variables of the Controller's type, which Cython takes from kraftspec.impl.controller
as each of them is imported, so the controller must be imported before them, and it imports them."""


class _Finder(importlib.abc.MetaPathFinder):
    """Serves the compiled modules of one build, and nothing else; and, for a package of FIRST, the
    package as found by the other finders, which then imports its first module."""

    def __init__(self, built: dict[str, Path], directory: Path):
        self.built, self.directory = built, directory

    def find_spec(self, name, path=None, target=None):
        if name in FIRST and FIRST[name] in self.built:
            for finder in sys.meta_path:
                found = finder.find_spec(name, path, target) if finder is not self and hasattr(finder, "find_spec") else None
                if found is not None and found.loader is not None:
                    found.loader = _ImportsFirst(found.loader, FIRST[name])
                    return found
            return None
        file = self.built.get(name)
        if file is None:
            return None
        loader = _CompiledLoader(name, str(file))
        return importlib.util.spec_from_file_location(name, file, loader=loader)


class _CompiledLoader(importlib.machinery.ExtensionFileLoader):
    """Loads a compiled module, then gives its attrs classes the compiled methods the build has
    for them (kraftspec.generated)."""

    def exec_module(self, module) -> None:
        super().exec_module(module)
        generated.adopt(module)


class _ImportsFirst(importlib.abc.Loader):
    """A package's loader that, once the package has run, imports one of its modules."""

    def __init__(self, loader, first: str):
        self.loader, self.first = loader, first

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        self.loader.exec_module(module)
        importlib.import_module(self.first)

    def __getattr__(self, name):  # get_resource_reader, is_package, ...: the package's own loader's
        return getattr(self.loader, name)


def enable() -> Path | None:
    """Load the compiled modules from now on, if a build matches the sources; the build's
    directory, or None (after a word on standard error) when there is none."""
    if active() is not None:
        return active()
    modules = sources()
    directory = cache_root() / build_key(modules)
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        print(f"kraftspec: {ENABLE}=1, but no compiled build in {cache_root()} matches the installed sources; "
              "running plain Python (run `kraftspec compile` to build one)", file=sys.stderr)
        return None
    built = {name: directory / file for name, file in manifest["modules"].items() if name in modules}
    if manifest.get("generated"):
        factories = _load(GENERATED, directory / manifest["generated"])
        generated.install(factories.FACTORIES)
    sys.meta_path.insert(0, _Finder(built, directory))
    return directory


def _load(name: str, file: Path):
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None, file
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def active() -> Path | None:
    """The build this process loads its compiled modules from, or None when it runs plain Python."""
    return next((finder.directory for finder in sys.meta_path if isinstance(finder, _Finder)), None)


def describe() -> str:
    """How this process runs the model, impl and the generator, in a line."""
    directory = active()
    if directory is None:
        return (f"modules: plain Python (after `kraftspec compile`, {ENABLE}=1 runs the model, impl and the "
                "generator compiled)")
    return f"modules: compiled by Cython ({ENABLE}=1; build {directory})"


def enable_if_asked() -> None:
    """What ``import kraftspec`` does: enable() when KRAFTSPEC_COMPILED=1."""
    if os.environ.get(ENABLE) == "1":
        enable()


def loaded() -> list[str]:
    """The kraftspec modules this process runs compiled."""
    return sorted(name for name, module in list(sys.modules.items())
                  if name.startswith("kraftspec.") and isinstance(getattr(module, "__loader__", None),
                                                                 importlib.machinery.ExtensionFileLoader))


def build(into: Path | None = None, jobs: int | None = None, out=sys.stdout) -> Path:
    """Compile the sources into the cache (or ``into``); the build's directory. Does nothing when a
    build for these sources is there already."""
    try:
        from Cython.Build import cythonize
        from setuptools import Distribution, Extension
    except ImportError:
        raise CompileError("compiling needs Cython and setuptools, which are not installed; "
                           "install them with: pip install 'kraftspec[compiled]'") from None
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        raise CompileError(f"compiling needs a C compiler ({compiler}), which was not found on PATH; "
                           "on Debian or Ubuntu: apt-get install gcc")
    if not Path(sysconfig.get_paths()["include"], "Python.h").exists():
        raise CompileError(f"compiling needs Python's C headers, not found in {sysconfig.get_paths()['include']}; "
                           f"on Debian or Ubuntu: apt-get install python{sys.version_info.major}.{sys.version_info.minor}-dev")
    modules = sources()
    root = into or cache_root()
    directory = root / build_key(modules)
    if (directory / MANIFEST).exists():
        print(f"already built for these sources: {directory}", file=out)
        return directory
    jobs = jobs or os.cpu_count() or 1
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kraftspec-compile-") as work:
        tree = Path(work, "src")
        extensions = []
        pxds = declarations(modules)
        for name, path in modules.items():  # a copy of each source, and its declarations, where its module name says
            copy = tree.joinpath(*name.split(".")).with_suffix(".py")
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
            if name in pxds:
                shutil.copyfile(pxds[name], copy.with_suffix(".pxd"))
            extensions.append(Extension(name, [str(copy)]))
        print("collecting the functions written at run time, from a short run of the conformance job and impl's benchmarked paths", file=out, flush=True)
        written = collect_generated()
        factories = tree.joinpath(*GENERATED.split(".")).with_suffix(".py")
        factories.parent.mkdir(parents=True, exist_ok=True)
        factories.write_text(generated.factory_module(written), encoding="utf-8")
        extensions.insert(0, Extension(GENERATED, [str(factories)]))  # the largest: first, while the others share the other cores
        for package in {name.rpartition(".")[0] for name in pxds}:  # a cimport finds the packages by their __init__
            for depth in range(1, package.count(".") + 2):
                tree.joinpath(*package.split(".")[:depth], "__init__.py").touch()
        print(f"compiling {len(modules)} modules and {len(written)} functions written at run time with Cython ({jobs} at a time); "
              "this takes a few minutes", file=out, flush=True)
        # annotation_typing off: Cython then reads no annotation as a C-level type check, so the
        # compiled code accepts exactly what the plain code accepts; nonecheck: a variable declared
        # as one of impl's classes (in a .pxd) that holds None raises AttributeError, as in plain Python
        try:
            compiled = cythonize(extensions, build_dir=str(Path(work, "c")), nthreads=jobs, quiet=True, include_path=[str(tree)],
                                 compiler_directives={"language_level": 3, "binding": True, "annotation_typing": False,
                                                      "nonecheck": True})
        except Exception as error:  # Cython's own CompileError, from the worker that compiled the module
            raise CompileError(f"Cython {_release('Cython')} could not compile {error}: its message, with the line, "
                               "is above. Nothing was built, and kraftspec runs plain Python until a build succeeds; "
                               "please report it with that message") from None
        for extension in compiled:
            for c_file in extension.sources:
                c_path = Path(c_file)
                c_path.write_text(with_attribute_caches(c_path.read_text(encoding="utf-8")), encoding="utf-8")
        staging = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
        try:
            distribution = Distribution({"ext_modules": compiled, "script_name": "kraftspec-compile"})
            command = distribution.get_command_obj("build_ext")
            command.build_lib, command.build_temp, command.parallel = str(staging), str(Path(work, "o")), jobs
            _quietly(lambda: distribution.run_command("build_ext"))
            files = {name: str(next(staging.glob(f"{name.replace('.', '/')}.*.so")).relative_to(staging)) for name in [*modules, GENERATED]}
            manifest = {"modules": {name: files[name] for name in modules}, "generated": files[GENERATED],
                        "python": sys.version.split()[0]}
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
            try:
                staging.rename(directory)  # whole or not at all
            except OSError:  # another build got there first
                if not (directory / MANIFEST).exists():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    print(f"built {len(modules)} modules and {len(written)} functions written at run time in {time.monotonic() - started:.0f} s: "
          f"{directory}", file=out)
    removed = prune(root, directory)
    older = [size for path, size in removed if not path.name.startswith(".building-")]
    unfinished = [size for path, size in removed if path.name.startswith(".building-")]
    if older:
        print(f"removed {len(older)} older build(s) from {root}, {sum(older) / 1e6:.0f} MB "
              f"(it keeps the {BUILDS_KEPT} newest)", file=out)
    if unfinished:
        print(f"removed {len(unfinished)} unfinished build(s) from {root}, {sum(unfinished) / 1e6:.0f} MB, "
              "left by a compile that was stopped", file=out)
    return directory


BUILDS_KEPT = 3
"""How many builds a directory of builds keeps: the newest, so that switching between a few versions
of the sources does not compile each again, while a build per edit does not pile up (each is some
80 MB)."""


UNFINISHED_AFTER_S = 3600
"""How long a build's staging directory (``.building-*``) may go untouched before :func:`prune`
takes it for one left by a compile that was stopped (a build writes into it for a few minutes)."""


def prune(root: Path, current: Path, kept: int = BUILDS_KEPT, now: float | None = None) -> list[tuple[Path, int]]:
    """Remove the builds in ``root`` beyond the ``kept`` newest, ``current`` always among those kept,
    and the staging directories of builds that were stopped (nothing in them changed for
    UNFINISHED_AFTER_S); each one removed, with the bytes it held. A build is a directory named by
    a build key and holding a manifest; nothing else in ``root`` is touched."""
    builds = [d for d in root.iterdir() if d != current and re.fullmatch(r"[0-9a-f]{20}", d.name) and (d / MANIFEST).is_file()]
    builds.sort(key=lambda d: (d / MANIFEST).stat().st_mtime, reverse=True)
    now = time.time() if now is None else now
    unfinished = [d for d in root.iterdir() if d.name.startswith(".building-") and d.is_dir()
                  and now - max([d.stat().st_mtime] + [f.stat().st_mtime for f in d.rglob("*")]) > UNFINISHED_AFTER_S]
    removed = []
    for build in builds[max(kept - 1, 0):] + unfinished:
        size = sum(f.stat().st_size for f in build.rglob("*") if f.is_file())
        shutil.rmtree(build, ignore_errors=True)
        removed.append((build, size))
    return removed


ATTRIBUTE_CACHE = r"""
/* kraftspec compile: a cache at each place that reads or sets an attribute, as CPython's interpreter
   keeps one. Cython looks obj.name up through the type each time (the name hashed into the type's
   method cache, the descriptor found, called); here each such place remembers the type it last
   saw, that type's version tag (which CPython changes whenever the type or one of its bases is
   changed) and, when the attribute is a slot (__slots__), the slot's offset, which it then reads or
   sets directly while the object is of that type and the tag holds. Anything else (an object of
   another type, a type with its own __getattribute__, __getattr__ or __setattr__, an attribute that
   is not a slot, a slot that is not set, a read-only one) takes the generic way, as before. (Class
   attributes and methods were cached too, for a time: it saved nothing measurable.) */
#if !defined(Py_LIMITED_API) && !defined(PYPY_VERSION) && defined(__GNUC__) && PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#include "structmember.h"
typedef struct { PyTypeObject *type; unsigned int version; Py_ssize_t offset; } __kraftspec_attribute_cache;

enum { __KRAFTSPEC_GET, __KRAFTSPEC_SET, __KRAFTSPEC_GENERIC_SET };

/* Fill ``cache`` for ``type`` and ``use`` with the slot's offset, or empty it. __KRAFTSPEC_SET is
   obj.name = value, which the type may do its own way; __KRAFTSPEC_GENERIC_SET is
   PyObject_GenericSetAttr, which sets the slot whatever the type's __setattr__ (what
   object.__setattr__ runs, in the __init__ of a frozen attrs class). */
static void __kraftspec_attribute_look(__kraftspec_attribute_cache *cache, PyTypeObject *type, PyObject *name, int use) {
    cache->type = NULL;
    cache->offset = 0;
    if (!PyUnicode_CheckExact(name))
        return;
    if (use == __KRAFTSPEC_GET ? type->tp_getattro != PyObject_GenericGetAttr
            : use == __KRAFTSPEC_SET && type->tp_setattro != PyObject_GenericSetAttr)
        return;
    PyObject *found = _PyType_Lookup(type, name); /* borrowed; gives the type a version tag */
    if (found == NULL || !PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG) || !Py_IS_TYPE(found, &PyMemberDescr_Type))
        return;
    PyMemberDef *member = ((PyMemberDescrObject *)found)->d_member;
    if (member->type != T_OBJECT_EX || (use != __KRAFTSPEC_GET && (member->flags & READONLY)))
        return;
    cache->offset = member->offset;
    cache->type = type;
    cache->version = type->tp_version_tag;
}

static inline PyObject *__kraftspec_getattr(__kraftspec_attribute_cache *cache, PyObject *obj, PyObject *name) {
    PyTypeObject *type = Py_TYPE(obj);
    if (type != cache->type || type->tp_version_tag != cache->version)
        __kraftspec_attribute_look(cache, type, name, __KRAFTSPEC_GET);
    if (type == cache->type) {
        PyObject *value = *(PyObject **)((char *)obj + cache->offset);
        if (value != NULL) {
            Py_INCREF(value);
            return value;
        }
    }
    return PyObject_GetAttr(obj, name);
}

static inline int __kraftspec_setattr(__kraftspec_attribute_cache *cache, PyObject *obj, PyObject *name, PyObject *value,
                                      int use) {
    PyTypeObject *type = Py_TYPE(obj);
    if (type != cache->type || type->tp_version_tag != cache->version)
        __kraftspec_attribute_look(cache, type, name, use);
    if (type == cache->type && value != NULL) {
        PyObject **slot = (PyObject **)((char *)obj + cache->offset);
        PyObject *old = *slot;
        Py_INCREF(value);
        *slot = value;
        Py_XDECREF(old);
        return 0;
    }
    return use == __KRAFTSPEC_SET ? PyObject_SetAttr(obj, name, value) : PyObject_GenericSetAttr(obj, name, value);
}

#define __KRAFTSPEC_GETATTR(obj, name) __extension__ ({ \
    static __kraftspec_attribute_cache __kraftspec_cache; __kraftspec_getattr(&__kraftspec_cache, (obj), (name)); })
#define __KRAFTSPEC_SETATTR(obj, name, value) __extension__ ({ \
    static __kraftspec_attribute_cache __kraftspec_cache; \
    __kraftspec_setattr(&__kraftspec_cache, (obj), (name), (value), __KRAFTSPEC_SET); })
#define __KRAFTSPEC_GENERIC_SETATTR(obj, name, value) __extension__ ({ \
    static __kraftspec_attribute_cache __kraftspec_cache; \
    __kraftspec_setattr(&__kraftspec_cache, (obj), (name), (value), __KRAFTSPEC_GENERIC_SET); })
#else
#define __KRAFTSPEC_GETATTR(obj, name) PyObject_GetAttr((obj), (name))
#define __KRAFTSPEC_SETATTR(obj, name, value) PyObject_SetAttr((obj), (name), (value))
#define __KRAFTSPEC_GENERIC_SETATTR(obj, name, value) PyObject_GenericSetAttr((obj), (name), (value))
#endif
"""

_READ = re.compile(r"(?<= = )__Pyx_PyObject_GetAttrStr\(")
_SET = re.compile(r"(?<=  if \()__Pyx_PyObject_SetAttrStr\(")
_GENERIC_SET = re.compile(r"(?<= = )PyObject_GenericSetAttr\(")  # kraftspec.generated's _kraftspec_setattr


def with_attribute_caches(code: str) -> str:
    """The C that Cython wrote for a module, each place in it that reads an attribute (``x =
    obj.name``) or sets one (``obj.name = x``, and kraftspec.generated's ``PyObject_GenericSetAttr``)
    made to keep a cache of its own (ATTRIBUTE_CACHE). The source's meaning is untouched: where its
    cache does not hold, the attribute is looked up as Cython's own code looks it up."""
    include = '#include "Python.h"\n'
    head, found, rest = code.partition(include)
    if not found:
        raise CompileError('Cython wrote C that does not include "Python.h" as kraftspec compile expects; '
                           "is this a release of Cython it was not written for?")
    rest = _READ.sub("__KRAFTSPEC_GETATTR(", rest)
    rest = _SET.sub("__KRAFTSPEC_SETATTR(", rest)
    return head + include + ATTRIBUTE_CACHE + _GENERIC_SET.sub("__KRAFTSPEC_GENERIC_SETATTR(", rest)


COLLECT = r"""
import json, sys
from kraftspec import generated
generated.start_collecting()  # before the modules that write functions are imported
from kraftspec.compiled import CALLS_PER_TRACE, exercise
called, profile = generated.calls()
sys.setprofile(profile)
modules, traces = exercise()
sys.setprofile(None)
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump(generated.collected(modules, called, at_least=CALLS_PER_TRACE * traces), out)
"""
CALLS_PER_TRACE = 3  # a function written at run time is compiled if the exercise calls it this often a trace


def exercise() -> tuple[list, int]:
    """A short run of the conformance job, plain, in every profile and at every level, then of the
    paths of impl that ``kraftspec bench`` measures (its request paths, not the walks'), so that the
    functions they write at run time are written and called; the modules compiled that it
    imported, and how many traces it checked."""
    from kraftspec.conformance.spark import Workload, check_seeds
    from kraftspec.spec.profiles import profile_names

    traces = 0
    for profile in profile_names():
        for level in ("responses", "state", "records"):
            traces += len(list(check_seeds(range(6), Workload(traces=6, profile=profile, level=level))))
        exercise_impl(profile)
    return [sys.modules[name] for name in sources() if name in sys.modules], traces


def exercise_impl(profile: str) -> None:
    """impl's paths that ``kraftspec bench impl`` and ``bench kafka`` time, on a small cluster: rounds
    of AlterIsr requests (the requests, their records and their responses), a fencing and a
    controlled shutdown (some hundreds of partition changes each), a snapshot written and loaded. The
    conform walks call some of those functions too seldom to be collected (a PartitionChangeRecord's
    ``make``, about three a trace), while a fencing calls one thousands of times."""
    from kraftspec.bench import ImplIsrMix, impl_cluster, impl_config, impl_fence, timed_heartbeat
    from kraftspec.impl.controller import Controller

    with tempfile.TemporaryDirectory(prefix="kraftspec-exercise-") as directory:
        controller = impl_cluster(1_200, 12, directory, profile=profile)
        ImplIsrMix(controller, 300).run(2)  # first: its ISRs grow back to every replica, none fenced
        impl_fence(controller, 3)
        timed_heartbeat(controller, 9, want_shut_down=True)
        controller.commit(controller.log_end_offset)
        controller.take_snapshot()
        controller.close()
        Controller.open(directory, impl_config(profile)).close()


def collect_generated() -> generated.Collected:
    """The functions written at run time that a short run of the conformance job and of impl's
    benchmarked paths (``exercise``) writes and calls often, by key (kraftspec.generated.collected),
    collected by a plain process."""
    with tempfile.TemporaryDirectory(prefix="kraftspec-collect-") as work:
        found = Path(work, "generated.json")
        env = {**os.environ, ENABLE: "0"}
        result = subprocess.run([sys.executable, "-c", COLLECT, str(found)], capture_output=True, text=True, env=env)
        if result.returncode != 0:
            raise CompileError(f"collecting the functions written at run time failed:\n{result.stderr[-4000:]}")
        written = json.loads(found.read_text(encoding="utf-8"))
    return {digest: (source, tuple(bound), setters) for digest, (source, bound, setters) in written.items()}


def _quietly(action) -> None:
    """Run ``action`` with the C compiler's output kept back, and shown only if it fails."""
    with tempfile.TemporaryFile("w+") as log:
        saved = os.dup(1), os.dup(2)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            action()
        except Exception as error:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            log.seek(0)
            raise CompileError(f"the C compiler failed ({error}); its output:\n{log.read()[-4000:]}") from None
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def add_parser(commands) -> None:
    parser = commands.add_parser(
        "compile",
        help="compile the model, impl and the walk generator with Cython, to run them faster",
        description="Compile the model, impl and the walk generator with Cython, from the same source files "
        "that plain Python runs, and with them the functions that kraftspec and attrs write at run time which "
        "a short run of the conformance job and of impl's benchmarked request paths calls most, and keep the result in a cache directory. Afterwards, any kraftspec command "
        f"run with the environment variable {ENABLE}=1 uses the compiled modules, as long as they were built "
        "from exactly the installed sources, with the installed releases of attrs and Cython (after a change "
        "to any of them, it runs plain Python and says so, until you compile again). A compiled run gives the same traces and verdicts as a plain one, byte for byte; "
        f"it is only faster. Of the builds in the cache directory, the {BUILDS_KEPT} newest are kept and older ones "
        "removed, as is what a compile that was stopped left there. Needs Cython and setuptools (pip install 'kraftspec[compiled]'), a C compiler and "
        "Python's C headers.",
        epilog=f"Example: kraftspec compile && {ENABLE}=1 kraftspec conform --traces 100000",
    )
    parser.add_argument("--into", metavar="DIR", type=Path, default=None,
                        help=f"keep the build in DIR rather than the cache directory (set {DIRECTORY}=DIR to use it); "
                        "default: $XDG_CACHE_HOME/kraftspec/compiled, or ~/.cache/kraftspec/compiled")
    parser.add_argument("--jobs", metavar="N", type=int, default=None,
                        help="how many modules to compile at once (default: the number of cores)")
    parser.add_argument("--where", action="store_true",
                        help="only print the directory a build for the installed sources has, or would have, and "
                        "whether it exists (exit status 0 if it does, 1 if not)")


def run(args: argparse.Namespace) -> int:
    if args.where:
        directory = (args.into or cache_root()) / build_key(sources())
        built = (directory / MANIFEST).exists()
        print(f"{directory} ({'built' if built else 'not built'})")
        return 0 if built else 1
    try:
        build(args.into, args.jobs)
    except CompileError as error:
        print(f"kraftspec compile: {error}", file=sys.stderr)
        return 2
    return 0
