# Cython's declarations for impl/replication.py, read only by `kraftspec compile` (plain Python never
# reads them): its slotted classes as extension types whose attributes are objects, as their
# __slots__ are, and which variables of its hot functions hold one of impl's own objects.
# cli/compiled.py says why and what may be declared.

cimport cython

from kraftspec.impl.journal cimport Journal

cdef class Topic:
    cdef public object name, topic_id, partitions

cdef class Partition:
    cdef public object topic, partition_id, replicas, isr, removing_replicas, adding_replicas, leader, leader_epoch
    cdef public object partition_epoch

    cpdef fields(self)

cdef class ReplicationControl:
    cdef public dict topics, topics_by_name, topics_by_int, replica_of, leaderships
    cdef public set reassigning
    cdef public Journal journal
    cdef public object topic_places

    @cython.locals(topic=Topic)
    cpdef partition(self, topic_id, partition_id)

    @cython.locals(topic=Topic, partition=Partition, held=set)
    cpdef replay_partition(self, record)

    @cython.locals(topic=Topic, partition=Partition, images=dict, counts=dict)
    cpdef replay_partition_change(self, record)
