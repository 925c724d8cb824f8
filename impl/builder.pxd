# Cython's declarations for impl/builder.py, read only by `kraftspec compile` (plain Python never
# reads them): its slotted classes as extension types whose attributes are objects, as their
# __slots__ are, and which variables of its hot functions hold one of impl's own objects.
# cli/compiled.py says why and what may be declared.

cimport cython

from kraftspec.impl.replication cimport Partition

cpdef elect(replicas, isr, eligible)

cpdef preferred_order(replicas, removing)

@cython.locals(partition=Partition)
cpdef build_change(partition, stays, eligible, isr=*, replicas=*, removing=*, adding=*, leader=*, completes=*,
                   bump_on_removal=*)

@cython.locals(partition=Partition)
cpdef leave_changes(partitions, broker_id, stays, eligible, completes=*, bump_on_removal=*)
