# Cython's declarations for impl/metrics.py, read only by `kraftspec compile` (plain Python never
# reads them): its slotted classes as extension types whose attributes are objects, as their
# __slots__ are, and which variables of its hot functions hold one of impl's own objects.
# cli/compiled.py says why and what may be declared.

cdef class ControllerMetrics:
    cdef public object appended, recent, recent_records, observations, latency_sum_ms, latest_latency_ms
    cdef public object committed_records, snapshot_offset

    cpdef appended_batch(self, base_offset, end_offset, now_ms)
    cpdef committed(self, offset, now_ms)
