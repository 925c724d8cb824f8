# Cython's declarations for conformance/simulation.py, read only by `kraftspec compile` (plain Python
# never reads them): its classes as extension types whose attributes are objects, as their
# __slots__ are, and which of those only ever hold a dict or a set, so that compiled code reads the
# simulation's fields, at every step, as a C struct's. cli/compiled.py says why and what may be
# declared.

cdef class ImageFacts:
    cdef public object image, topic, moving, topic_moving, _in_sync, _led

cdef class Simulation:
    cdef public object rng, state, own_request, partition_count, _facts
    cdef public dict processes, heartbeat_due, registration_due, shutdown_asked_at, incarnations, asked
    cdef public set waiting_registration
