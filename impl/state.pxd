# Cython's declarations for impl/state.py, read only by `kraftspec compile` (plain Python never
# reads them): its slotted classes as extension types whose attributes are objects, as their
# __slots__ are, and which variables of its hot functions hold one of impl's own objects.
# cli/compiled.py says why and what may be declared.

cimport cython

from kraftspec.impl.cluster cimport ClusterControl
from kraftspec.impl.journal cimport Journal
from kraftspec.impl.replication cimport ReplicationControl

cdef class MetadataState:
    cdef public Journal journal
    cdef public ClusterControl cluster
    cdef public ReplicationControl replication
    cdef public object _replay

    cpdef replay(self, record)

    @cython.locals(replication=ReplicationControl)
    cpdef replay_all(self, records)
