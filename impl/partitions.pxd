# Cython's declarations for impl/partitions.py, read only by `kraftspec compile` (plain Python never
# reads them): its slotted classes as extension types whose attributes are objects, as their
# __slots__ are, and which variables of its hot functions hold one of impl's own objects.
# cli/compiled.py says why and what may be declared.

cimport cython

from kraftspec.impl.controller cimport Controller
from kraftspec.impl.leases cimport Lease

@cython.locals(controller=Controller)
cpdef stays_leader(controller, broker_id)

@cython.locals(controller=Controller, lease=Lease)
cpdef is_eligible_leader(controller, broker_id)

@cython.locals(controller=Controller)
cpdef partition_change(controller, partition, stays=*, eligible=*, isr=*, replicas=*, removing=*, adding=*, leader=*)
