# Cython's declarations for conformance/generate.py, read only by `kraftspec compile` (plain Python
# never reads them): the walk generator's simulation with faults as an extension type, as the
# simulation it extends is (simulation.pxd), so that compiled code reads its fields, at every step,
# as a C struct's. cli/compiled.py says why and what may be declared.

from kraftspec.conformance.simulation cimport Simulation

cdef class FaultySimulation(Simulation):
    cdef public object faults, seen
    cdef public list sent_heartbeats
    cdef public dict old_epochs, views
    cdef public set unregistered
