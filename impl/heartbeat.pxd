# Cython's declarations for impl/heartbeat.py, read only by `kraftspec compile` (plain Python never
# reads them): its slotted classes as extension types whose attributes are objects, as their
# __slots__ are, and which variables of its hot functions hold one of impl's own objects.
# cli/compiled.py says why and what may be declared.

cimport cython

from kraftspec.impl.cluster cimport Registration
from kraftspec.impl.controller cimport Controller
from kraftspec.impl.leases cimport Lease, LeaseManager

@cython.locals(controller=Controller, leases=LeaseManager, registration=Registration, lease=Lease)
cpdef handle_broker_heartbeat(controller, request, version)

@cython.locals(controller=Controller)
cpdef has_applied(controller, recorded, offset)

@cython.locals(controller=Controller, registration=Registration, lease=Lease)
cpdef _status(controller, registration, lease, version, should_shut_down)
