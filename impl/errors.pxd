# Cython's declarations for impl/errors.py, read only by `kraftspec compile` (plain Python never
# reads them): its slotted classes as extension types whose attributes are objects, as their
# __slots__ are, and which variables of its hot functions hold one of impl's own objects.
# cli/compiled.py says why and what may be declared.

cdef class Refused:
    cdef public object rule, response
