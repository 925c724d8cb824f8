# Cython's declarations for impl/alter_isr.py, read only by `kraftspec compile` (plain Python never
# reads them): its slotted classes as extension types whose attributes are objects, as their
# __slots__ are, and which variables of its hot functions hold one of impl's own objects.
# cli/compiled.py says why and what may be declared.

cimport cython

from kraftspec.impl.cluster cimport ClusterControl, Registration
from kraftspec.impl.controller cimport Controller
from kraftspec.impl.replication cimport Partition, ReplicationControl

@cython.locals(controller=Controller, registration=Registration, replication=ReplicationControl, partition=Partition)
cpdef handle_alter_isr(controller, request, version)

@cython.locals(controller=Controller, replication=ReplicationControl, partition=Partition, cluster=ClusterControl)
cpdef _alter_partition(controller, requester, topic_id, entry, counts)
