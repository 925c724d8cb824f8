"""kraftspec compile gives each place in the C that Cython writes that reads or sets an attribute a
cache of its own (kraftspec.compiled.with_attribute_caches): the type last seen there, its version
tag and the slot's offset. A cache must never change what the code does: these tests compile a
small module with it and check, against what plain Python does, every way the cache could be
wrong (another type at the same place, a slot not set, a type changed after the cache was filled,
types that read or set attributes their own way, a read-only slot, objects without slots)."""

import sys
import textwrap

import pytest

from kraftspec.compiled import CompileError, with_attribute_caches

SOURCE = textwrap.dedent('''
    import cython
    from cython.cimports.cpython.object import PyObject_GenericSetAttr

    def read_a(obj):
        return obj.a

    def read_kind(obj):
        return obj.kind

    def call_method(obj):
        return obj.method()

    def set_a(obj, value):
        obj.a = value

    def generic_set_a(obj, value):
        PyObject_GenericSetAttr(obj, "a", value)
''')

# the classes, as plain Python: the compiled module's functions are given their instances
CLASSES = textwrap.dedent('''
    class Slotted:
        __slots__ = ("a", "b")

    class Other:  # "a" at another offset than Slotted's
        __slots__ = ("b", "c", "a")

    class Sub(Slotted):
        __slots__ = ("c",)

    class Loose:  # no slots: the attribute is in the instance's dict
        pass

    class Hooked:  # reads what is not set its own way
        __slots__ = ("a",)

        def __getattr__(self, name):
            return f"hooked {name}"

    class Methods:  # no __dict__: what the type has cannot be hidden by the object's own
        __slots__ = ("a",)
        kind = "a class attribute"

        def method(self):
            return ("method of", self)

    class Shadowed:  # objects with a __dict__, which can hide the type's attributes
        kind = "a class attribute"

        def method(self):
            return "the type's"

    class Frozen:  # sets its own way (as a frozen attrs class does)
        __slots__ = ("a",)

        def __setattr__(self, name, value):
            raise AttributeError(f"frozen: {name}")
''')


@pytest.fixture(scope="module")
def cached(tmp_path_factory):
    """The module SOURCE compiled by Cython, its C given the caches, built as kraftspec compile builds."""
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension

    work = tmp_path_factory.mktemp("caches")
    source = work / "kraftspec_caches_probe.py"
    source.write_text(SOURCE, encoding="utf-8")
    [extension] = cythonize([Extension("kraftspec_caches_probe", [str(source)])], build_dir=str(work / "c"), quiet=True,
                            compiler_directives={"language_level": 3, "binding": True})
    [c_file] = extension.sources
    with open(c_file, encoding="utf-8") as f:
        code = with_attribute_caches(f.read())
    assert code.count("__KRAFTSPEC_GETATTR(") >= 2 and code.count("__KRAFTSPEC_SETATTR(") >= 2
    assert code.count("__KRAFTSPEC_GENERIC_SETATTR(") >= 2
    with open(c_file, "w", encoding="utf-8") as f:
        f.write(code)
    distribution = Distribution({"ext_modules": [extension], "script_name": "test"})
    command = distribution.get_command_obj("build_ext")
    command.build_lib, command.build_temp = str(work / "lib"), str(work / "o")
    distribution.run_command("build_ext")
    sys.path.insert(0, str(work / "lib"))
    try:
        import kraftspec_caches_probe
    finally:
        sys.path.remove(str(work / "lib"))
    return kraftspec_caches_probe


@pytest.fixture
def classes():
    """The classes afresh for each test (some tests change them)."""
    namespace: dict = {}
    exec(CLASSES, namespace)
    return type("Classes", (), namespace)


def made(cls, **values):
    obj = cls.__new__(cls)
    for name, value in values.items():
        object.__setattr__(obj, name, value)
    return obj


def test_one_place_reads_each_type_s_own_slot_whatever_type_came_before(cached, classes):
    objects = [made(classes.Slotted, a=1, b=2), made(classes.Other, a=3, b=4, c=5), made(classes.Sub, a=6, b=7, c=8)]
    loose = classes.Loose()
    loose.a = 9
    for _ in range(3):  # each type after each other, at the same place, the cache filled and filled again
        assert [cached.read_a(obj) for obj in [*objects, loose]] == [1, 3, 6, 9]


def test_a_slot_not_set_raises_as_plain_python_does(cached, classes):
    obj = made(classes.Slotted, a=1)
    assert cached.read_a(obj) == 1  # the cache filled for Slotted
    with pytest.raises(AttributeError) as compiled:
        cached.read_a(made(classes.Slotted))
    with pytest.raises(AttributeError) as plain:
        made(classes.Slotted).a  # noqa: B018
    assert str(compiled.value) == str(plain.value)
    hooked = made(classes.Hooked)
    assert cached.read_a(hooked) == "hooked a"  # a type that reads what is not set its own way
    assert cached.read_a(made(classes.Hooked, a=1)) == 1


def test_a_type_changed_after_its_cache_was_filled_is_read_and_set_as_it_now_is(cached, classes):
    obj = made(classes.Slotted, a=1)
    assert cached.read_a(obj) == 1
    cached.set_a(obj, 2)
    slot = classes.Slotted.a
    classes.Slotted.a = property(lambda self: "a property", lambda self, value: setattr(self, "b", value))
    assert cached.read_a(obj) == "a property"
    cached.set_a(obj, 3)
    assert obj.b == 3 and slot.__get__(obj) == 2  # set through the property, the slot left as it was
    classes.Slotted.a = slot
    assert cached.read_a(obj) == 2
    classes.Slotted.__setattr__ = lambda self, name, value: object.__setattr__(self, "b", (name, value))
    cached.set_a(obj, 4)  # the type now sets its own way
    assert (slot.__get__(obj), obj.b) == (2, ("a", 4))


def test_class_attributes_and_methods_are_what_the_type_has_now_unless_the_object_hides_them(cached, classes):
    obj = made(classes.Methods)
    assert (cached.read_kind(obj), cached.call_method(obj)) == ("a class attribute", ("method of", obj))
    classes.Methods.kind = "changed"
    classes.Methods.method = lambda self: "replaced"
    assert (cached.read_kind(obj), cached.call_method(obj)) == ("changed", "replaced")

    class Descriptor:  # a __get__ written in Python, which changes the type as it runs
        def __get__(self, instance, owner):
            owner.kind = "after"
            return ("got", instance is obj, owner is classes.Methods)

    classes.Methods.kind = Descriptor()
    assert cached.read_kind(obj) == ("got", True, True)
    assert cached.read_kind(obj) == "after"
    shadowed = classes.Shadowed()
    assert (cached.read_kind(shadowed), cached.call_method(shadowed)) == ("a class attribute", "the type's")
    shadowed.kind, shadowed.method = "the object's", lambda: "the object's"
    assert (cached.read_kind(shadowed), cached.call_method(shadowed)) == ("the object's", "the object's")


def test_a_type_that_comes_to_read_attributes_its_own_way_is_read_its_own_way(cached, classes):
    obj = made(classes.Slotted, a=1)
    methods = made(classes.Methods, a=2)
    assert (cached.read_a(obj), cached.read_kind(methods)) == (1, "a class attribute")
    classes.Slotted.__getattribute__ = lambda self, name: f"its own {name}"
    classes.Methods.__getattribute__ = lambda self, name: f"its own {name}"
    assert (cached.read_a(obj), cached.read_kind(methods)) == ("its own a", "its own kind")


def test_setting_keeps_to_each_type_s_own_way_and_the_generic_way_bypasses_it(cached, classes):
    obj = made(classes.Slotted)
    cached.set_a(obj, 1)
    assert obj.a == 1
    frozen = made(classes.Frozen, a=1)
    with pytest.raises(AttributeError, match="frozen: a"):
        cached.set_a(frozen, 2)
    cached.generic_set_a(frozen, 2)  # what object.__setattr__ does
    assert frozen.a == 2
    loose = classes.Loose()
    cached.set_a(loose, 5)
    cached.generic_set_a(loose, 6)
    assert loose.__dict__ == {"a": 6}
    with pytest.raises(AttributeError):  # a read-only attribute (a C type's member) stays read-only
        cached.set_a(slice(1, 2), 3)
    with pytest.raises(AttributeError):
        cached.generic_set_a(slice(1, 2), 3)


def test_the_cache_holds_its_references_as_plain_python_does(cached, classes):
    value, other = object(), object()
    obj = made(classes.Slotted)
    before = sys.getrefcount(value), sys.getrefcount(other)
    for _ in range(1000):
        cached.set_a(obj, value)
        assert cached.read_a(obj) is value
        cached.generic_set_a(obj, other)
    assert (sys.getrefcount(value), sys.getrefcount(other)) == (before[0], before[1] + 1)  # obj.a holds other
    del obj
    assert sys.getrefcount(other) == before[1]


def test_c_that_is_not_what_the_caches_expect_is_refused():
    with pytest.raises(CompileError, match="Python.h"):
        with_attribute_caches("int main(void) { return 0; }\n")
