# Cython's declarations for impl/leases.py, read only by `kraftspec compile` (plain Python never
# reads them): its slotted classes as extension types whose attributes are objects, as their
# __slots__ are, and which variables of its hot functions hold one of impl's own objects.
# cli/compiled.py says why and what may be declared.

cimport cython

cdef class Lease:
    cdef public object last_contact_ms, metadata_offset, in_controlled_shutdown, released, shutdown_offset, version

cdef class LeaseManager:
    cdef public object session_timeout_ms, lapse_margin, deadlines, _versions
    cdef public dict leases
    cdef public list acknowledged
    cdef public set unfenced
    cdef public object sessions, next_scan_ms

    @cython.locals(lease=Lease)
    cpdef touch(self, broker_id, now_ms, metadata_offset=*)
