# Cython's declarations for impl/cluster.py, read only by `kraftspec compile` (plain Python never
# reads them): its slotted classes as extension types whose attributes are objects, as their
# __slots__ are, and which variables of its hot functions hold one of impl's own objects.
# cli/compiled.py says why and what may be declared.

cimport cython

cdef class Registration:
    cdef public object broker_id, incarnation_id, epoch, end_points, features, rack, fenced, in_controlled_shutdown

cdef class ClusterControl:
    cdef public dict brokers, features, record_offsets
    cdef public object journal

    @cython.locals(registration=Registration)
    cpdef is_active(self, broker_id)

    @cython.locals(registration=Registration)
    cpdef is_eligible(self, broker_id)
