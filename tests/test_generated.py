"""kraftspec.generated: the functions kraftspec writes at run time run as exec would run them, and
their compiled equivalents (made here by running the factory module's source with exec, as the
build does with Cython) take their place only where nothing but the speed can tell them apart."""

import ast
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
    exec(compile(generated.factory_module(sources, for_cython=False), "<factories>", "exec"), module)  # noqa: S102
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
    assert sources == {generated.key(SOURCE): (SOURCE, ("FACTOR", "NOTHING"), {})}
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
    assert [source for source, _, _ in fresh.collected([]).values()] == ["def h():\n    return len\n"]


def test_every_function_a_trace_converter_writes_can_be_compiled(fresh, monkeypatch):
    # a converter of an array of structs calls the struct's builder: were the builder defined after
    # it, the converter would read a name its namespace lacks when defined, and always run with exec
    from kraftspec.conformance import jsonform
    from kraftspec.conformance.adapters import make_impl

    monkeypatch.setattr(jsonform, "_FROM_JSON", {})
    fresh.start_collecting()
    build = jsonform.compiled_from_json("BrokerRegistrationRequest", 0, make_impl)
    request = build({"BrokerId": 1, "ClusterId": "c", "IncarnationId": "AAAAAAAAAAAAAAAAAAAAAA",
                     "Listeners": [{"Name": "PLAINTEXT", "Host": "h", "Port": 9092, "SecurityProtocol": 0}],
                     "Features": [{"Name": "metadata.format", "MinSupportedVersion": 1, "MaxSupportedVersion": 1}],
                     "Rack": None})
    assert request.listeners[0].port == 9092 and request.features[0].max_supported_version == 1
    defined = [source for source, *_ in fresh._collected]
    assert any("Listeners" in source for source in defined) and len(defined) > 3
    assert sorted(source for source, _, _ in fresh.collected([]).values()) == sorted(set(defined))


@attrs.frozen
class Point:
    x: int
    y: int = attrs.field(default=0, validator=attrs.validators.instance_of(int))


def test_attrs_methods_are_collected_and_adopted(fresh):
    fresh.start_collecting()
    sources = fresh.collected([sys.modules[__name__]])
    assert {s.split("(")[0] for s, _, _ in sources.values()} == {"def __init__", "def __eq__"}
    [init] = [s for s, _, _ in sources.values() if s.startswith("def __init__")]
    assert "_setattr = _cached_setattr_get(self)" in init  # what the factory calls directly
    assert "_kraftspec_setattr(self, 'x', x)" in generated.factory_module(sources)
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


def test_the_init_of_an_attrs_class_without_attributes_is_compiled_to_a_function_that_does_nothing(fresh):
    # attrs writes such an __init__ with one statement, the setter it then never calls; the
    # factory drops that statement, and must leave a body Cython can compile
    @attrs.frozen
    class Empty:
        pass

    holder = type(sys)("kraftspec_test_empty")
    holder.Empty = Empty  # type: ignore[attr-defined]
    Empty.__module__ = holder.__name__
    fresh.start_collecting()
    sources = fresh.collected([holder])
    [init] = [s for s, _, _ in sources.values() if s.startswith("def __init__")]
    assert init.strip().endswith("_setattr = _cached_setattr_get(self)")
    module = generated.factory_module(sources)
    ast.parse(module)
    assert "_cached_setattr_get(self)" not in module and "pass" in module
    fresh.install(factories_of(sources))
    assert fresh.adopt(holder) == 2
    assert Empty.__init__.__code__.co_filename == "<factories>"
    assert Empty() == Empty()


class Slotted:
    __slots__ = ("a", "b")

    def __setattr__(self, name, value):
        raise AttributeError("frozen")


SETTING = "def copy(o, a=None):\n    new = _new(Slotted)\n    _set_a(new, o.a if a is None else a)\n    _set_b(new, o.b)\n    return new\n"


def test_calls_of_a_slots_setter_are_compiled_to_the_setter_it_wraps(fresh):
    """A slot's ``__set__`` called through its bound wrapper becomes a direct call of what it wraps;
    a namespace holding anything else there runs the source with exec."""
    namespace = {"_new": object.__new__, "Slotted": Slotted, "_set_a": Slotted.a.__set__, "_set_b": Slotted.b.__set__}
    fresh.start_collecting()
    fresh.define(SETTING, dict(namespace), "test slots")
    sources = fresh.collected([])
    assert [setters for _, _, setters in sources.values()] == [{"_new": generated.NEW, "_set_a": generated.SLOT, "_set_b": generated.SLOT}]
    module = generated.factory_module(sources)
    assert "_kraftspec_descr_set(_set_a, new, o.a if a is None else a)" in module
    assert "new = _kraftspec_new(Slotted)" in module  # a __setattr__ of its own matters to no store here
    assert "_set_a = _kraftspec_setter('_set_a', namespace, \"a slot's __set__\").__self__" in module
    fresh.install(factories_of(sources))
    compiled = dict(namespace)
    fresh.define(SETTING, compiled, "test slots")
    assert fresh.compiled_count() == 1 and compiled["copy"].__code__.co_filename == "<factories>"
    original = object.__new__(Slotted)
    Slotted.a.__set__(original, 1)
    Slotted.b.__set__(original, [2])
    copied = compiled["copy"](original, a=3)
    assert (copied.a, copied.b) == (3, [2]) and copied.b is original.b
    otherwise = {**namespace, "_set_b": lambda new, value: Slotted.b.__set__(new, value)}
    fresh.define(SETTING, otherwise, "test slots")
    assert fresh.compiled_count() == 1 and otherwise["copy"].__code__.co_filename.startswith("<kraftspec generated")


def test_a_setter_used_otherwise_than_called_is_left_as_it_is():
    setters = {"_set_a": generated.SLOT, "get": generated.GETTER}
    statements = ast.parse("def f(o, v):\n    s = get(o)\n    s('a', v)\n    return s, _set_a\n").body
    assert generated._direct_setters(statements, setters) == (set(), set())
    statements = ast.parse("def f(o, v):\n    s = get(o)\n    o = v\n    s('a', v)\n").body
    assert generated._direct_setters(statements, setters) == (set(), set())  # the object rebound
    statements = ast.parse("def f(o, v):\n    s = get(o)\n    s('a', v)\n    s('b', v)\n").body
    assert generated._direct_setters(statements, setters) == (set(), {"get"})
    assert ast.unparse(statements[0]) == "def f(o, v):\n    _kraftspec_setattr(o, 'a', v)\n    _kraftspec_setattr(o, 'b', v)"


def test_object_setattr_is_the_generic_setter_unless_a_class_written_in_c_sets_attributes_its_own_way():
    """What ``adopt`` asks before giving a class a compiled ``__init__`` that calls
    ``PyObject_GenericSetAttr`` where attrs's calls ``object.__setattr__``."""

    class Counted(int):  # int sets attributes as object does
        pass

    assert generated._sets_attributes_as_object_does(Point) and generated._sets_attributes_as_object_does(Counted)
    meta = type("Meta", (type,), {})  # type sets attributes its own way: object.__setattr__ refuses it
    with pytest.raises(TypeError, match="can't apply this __setattr__"):
        object.__setattr__(meta("M", (), {}), "x", 1)
    assert not generated._sets_attributes_as_object_does(meta)


class Plain:
    __slots__ = ("a", "b")


class Guarded(Plain):
    __slots__ = ()

    def __setattr__(self, name, value):  # a store through it is refused; the slot's own setter would not be
        raise AttributeError("frozen")


class Made(Plain):
    __slots__ = ()

    def __new__(cls):  # object.__new__ skips it; so must the compiled allocation, or not be used
        raise TypeError("made elsewhere")


class Loose:  # no slots: an attribute lands in the instance's dict
    pass


MAKING = "def make(a=_d_a, b=_d_b):\n    self = _new(_cls)\n    self.a = a\n    self.b = b\n    return self\n"


def test_an_allocation_by_object_new_and_the_stores_into_its_slots_are_compiled_to_what_they_call(fresh):
    """``self = object.__new__(cls)`` then ``self.name = value``, as impl's messages' ``make`` and the
    model state's copiers are written: compiled, the class's own allocation and each slot's own
    setter are called directly; a namespace whose class sets attributes its own way, allocates its
    own way or has no such slot runs the source with exec, and gives what exec gives."""
    namespace = {"_d_a": 1, "_d_b": None, "_new": object.__new__, "_cls": Plain}
    fresh.start_collecting()
    fresh.define(MAKING, dict(namespace), "test making")
    sources = fresh.collected([])
    assert [setters for _, _, setters in sources.values()] == [{"_new": generated.NEW}]
    module = generated.factory_module(sources)
    assert "self = _kraftspec_new(_cls)" in module and "_kraftspec_allocating(_cls)" in module
    assert "_kraftspec_descr_set(_kraftspec_slot_0, self, a)" in module and "_kraftspec_slot_1 = _kraftspec_slot(_cls, 'b')" in module
    fresh.install(factories_of(sources))
    compiled = dict(namespace)
    fresh.define(MAKING, compiled, "test making")
    assert fresh.compiled_count() == 1 and compiled["make"].__code__.co_filename == "<factories>"
    made = compiled["make"](b=[2])
    assert type(made) is Plain and (made.a, made.b) == (1, [2])
    for cls in (Guarded, Made, Loose):
        other = {**namespace, "_cls": cls}
        fresh.define(MAKING, other, "test making")
        assert other["make"].__code__.co_filename.startswith("<kraftspec generated"), cls
    assert fresh.compiled_count() == 1
    with pytest.raises(AttributeError, match="frozen"):
        other = {**namespace, "_cls": Guarded}
        fresh.define(MAKING, other, "test making")
        other["make"]()
    loose = {**namespace, "_cls": Loose}
    fresh.define(MAKING, loose, "test making")
    assert vars(loose["make"](a=3)) == {"a": 3, "b": None}
    another = {**namespace, "_new": lambda cls: object.__new__(cls)}  # not object.__new__ itself
    fresh.define(MAKING, another, "test making")
    assert fresh.compiled_count() == 1 and another["make"]().a == 1


def test_an_allocation_is_left_as_it_is_unless_its_object_is_made_once_of_a_bound_class():
    setters = {"_new": generated.NEW}
    for source in ("def f(cls):\n    o = _new(cls)\n    o.a = 1\n",  # the class a parameter
                   "def f(v):\n    o = _new(C)\n    o = v\n    o.a = 1\n",  # the object rebound
                   "def f():\n    C = int\n    o = _new(C)\n    o.a = 1\n",  # the class rebound
                   "def f():\n    o = new(C)\n    o.a = 1\n"):  # another allocator
        statements = ast.parse(source).body
        assert generated._direct_allocations(statements, setters, {"C", "new"}) == (set(), {}), source
        assert ast.unparse(statements[0]) == ast.unparse(ast.parse(source).body[0])
    statements = ast.parse("def f(v):\n    o = _new(C)\n    o.a = v\n    o.b += v\n    o.a = o.b\n    return o\n").body
    assert generated._direct_allocations(statements, setters, {"C", "_new"}) == ({("_new", "C")}, {"_kraftspec_slot_0": ("C", "a")})
    assert ast.unparse(statements[0]) == ("def f(v):\n    o = _kraftspec_new(C)\n    _kraftspec_descr_set(_kraftspec_slot_0, o, v)\n"
                                          "    o.b += v\n    _kraftspec_descr_set(_kraftspec_slot_0, o, o.b)\n    return o")
