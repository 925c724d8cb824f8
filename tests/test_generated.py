"""kraftspec.generated: the functions kraftspec writes at run time run as exec would run them, and
their compiled equivalents (made here by running the factory module's source with exec, as the
build does with Cython) take their place only where nothing but the speed can tell them apart."""

import linecache
import sys
import traceback

import attrs
import pytest

from kraftspec import generated


@pytest.fixture
def fresh(monkeypatch):
    """generated's registries, empty, and given back as they were after the test."""
    monkeypatch.setattr(generated, "_factories", {})
    monkeypatch.setattr(generated, "_collected", None)
    monkeypatch.setattr(generated, "_used", 0)
    return generated


def factories_of(sources) -> dict:
    """What a build installs, with the factory module run by exec rather than compiled."""
    module: dict = {}
    exec(compile(generated.factory_module(sources), "<factories>", "exec"), module)  # noqa: S102
    return module["FACTORIES"]


SOURCE = "def scaled(x):\n    return [FACTOR * v for v in x] if len(x) else NOTHING\n"


def test_define_runs_the_source_in_the_namespace_and_keeps_it_for_tracebacks(fresh):
    namespace = {"FACTOR": 3, "NOTHING": None}
    fresh.define(SOURCE, namespace, "test scaled")
    assert namespace["scaled"]([1, 2]) == [3, 6] and namespace["scaled"]([]) is None
    with pytest.raises(TypeError) as raised:
        namespace["scaled"](5)
    assert "return [FACTOR * v for v in x] if len(x) else NOTHING" in "".join(traceback.format_tb(raised.value.__traceback__))
    assert namespace["scaled"].__code__.co_filename.startswith("<kraftspec generated test scaled ")
    assert linecache.getlines(namespace["scaled"].__code__.co_filename)[0] == "def scaled(x):\n"
    assert fresh.compiled_count() == 0


def test_free_names_are_the_names_a_source_reads_and_does_not_define():
    source = "def a(x=DEFAULT):\n    return b(x) + len(x)\ndef b(y):\n    return [OTHER(z) for z in y]\nC = a\n"
    assert generated.free_names(source) == (("DEFAULT", "OTHER", "len"), ("C", "a", "b"))


def test_a_collected_source_is_defined_by_its_factory_with_the_names_bound_as_the_namespace_holds_them(fresh):
    fresh.start_collecting()
    fresh.define(SOURCE, {"FACTOR": 2, "NOTHING": None}, "test scaled")
    sources = fresh.collected([])
    assert sources == {generated.key(SOURCE): (SOURCE, ("FACTOR", "NOTHING"))}
    fresh.install(factories_of(sources))
    namespace = {"FACTOR": 5, "NOTHING": "none"}
    fresh.define(SOURCE, namespace, "test scaled")
    assert fresh.compiled_count() == 1
    assert namespace["scaled"].__code__.co_filename == "<factories>"  # the factory's, not exec's
    assert namespace["scaled"]([1]) == [5] and namespace["scaled"]([]) == "none"


def test_a_namespace_the_factory_cannot_serve_runs_the_source_with_exec(fresh):
    fresh.start_collecting()
    fresh.define(SOURCE, {"FACTOR": 2, "NOTHING": None}, "test scaled")
    fresh.install(factories_of(fresh.collected([])))
    lacking = {"FACTOR": 2}  # NOTHING missing: exec defines it, and the call says what is missing
    fresh.define(SOURCE, lacking, "test scaled")
    with pytest.raises(NameError, match="NOTHING"):
        lacking["scaled"]([])
    shadowing = {"FACTOR": 2, "NOTHING": None, "len": lambda x: 0}  # a builtin the compiled code would call directly
    fresh.define(SOURCE, shadowing, "test scaled")
    assert shadowing["scaled"]([1, 2]) is None
    assert fresh.compiled_count() == 0


def test_a_source_whose_names_are_missing_or_rebound_is_not_collected(fresh):
    fresh.start_collecting()
    fresh.define("def f():\n    return MISSING\n", {}, "test missing")
    rebound = {"LATER": 1}
    fresh.define("def g():\n    return LATER\n", rebound, "test rebound")
    rebound["LATER"] = 2  # exec's function reads the new value; one compiled when defined would not
    fresh.define("def h():\n    return len\n", {}, "test builtin")
    assert [source for source, _ in fresh.collected([]).values()] == ["def h():\n    return len\n"]


@attrs.frozen
class Point:
    x: int
    y: int = attrs.field(default=0, validator=attrs.validators.instance_of(int))


def test_attrs_methods_are_collected_and_adopted(fresh):
    fresh.start_collecting()
    sources = fresh.collected([sys.modules[__name__]])
    assert {s.split("(")[0] for s, _ in sources.values()} == {"def __init__", "def __eq__"}
    original = Point.__init__, Point.__eq__
    try:
        fresh.install(factories_of(sources))
        assert fresh.adopt(sys.modules[__name__]) == 2
        assert Point.__init__.__code__.co_filename == "<factories>"
        assert Point(1) == Point(1, 0) != Point(1, 2) and Point(1).y == 0
        with pytest.raises(TypeError):
            Point(1, "two")  # the validator still runs
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            Point(1).x = 2  # type: ignore[misc]
        assert Point.__eq__(Point(1), 1) is NotImplemented
    finally:
        Point.__init__, Point.__eq__ = original
