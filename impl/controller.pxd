# Cython's declarations for impl/controller.py, read only by `kraftspec compile` (plain Python never
# reads them): its slotted classes as extension types whose attributes are objects, as their
# __slots__ are, and which variables of its hot functions hold one of impl's own objects.
# cli/compiled.py says why and what may be declared.

from kraftspec.impl.leases cimport LeaseManager
from kraftspec.impl.metrics cimport ControllerMetrics
from kraftspec.impl.state cimport MetadataState

cdef class Reply:
    cdef public object seq, request, version, response

cdef class Outcome:
    cdef public object batches, replies, seq

cdef class Controller:
    cdef public object config, formats, codec, _fencing, now_ms
    cdef public MetadataState state
    cdef public LeaseManager leases
    cdef public object batches, disk, snapshots, startup, log_start_offset, log_end_offset, committed_offset, snapshot
    cdef public object pending, next_seq, _batch, _handlers, next_offset_unit, lao_versions
    cdef public ControllerMetrics metrics

    cpdef _add(self, record)
