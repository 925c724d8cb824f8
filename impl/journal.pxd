# Cython's declarations for impl/journal.py, read only by `kraftspec compile` (plain Python never
# reads them): its slotted classes as extension types whose attributes are objects, as their
# __slots__ are, and which variables of its hot functions hold one of impl's own objects.
# cli/compiled.py says why and what may be declared.

cdef class Journal:
    cdef public object batches
    cdef public dict current

    cpdef open_batch(self)
    cpdef close_batch(self, end_offset)
    cpdef commit(self, committed_offset)
