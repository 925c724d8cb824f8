package dev.kraftspec.kafka;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.metadata.placement.ClusterDescriber;
import org.apache.kafka.metadata.placement.PartitionAssignment;
import org.apache.kafka.metadata.placement.PlacementSpec;
import org.apache.kafka.metadata.placement.ReplicaPlacer;
import org.apache.kafka.metadata.placement.TopicAssignment;
import org.apache.kafka.metadata.placement.UsableBroker;

/**
 * A stand-in for Kafka's randomized placer, plugged in through Kafka's own {@link ReplicaPlacer}
 * interface: the deterministic placement of kraftspec's TOPIC-4 (DEC-26), so that a trace can name
 * the replicas a CreateTopics by replication factor gets. Kafka hands it the brokers a replica may
 * go to (registered, not in controlled shutdown, each marked fenced or not), as it hands them to its
 * own placer; everything the controller does with the assignment afterwards is Kafka's.
 *
 * <p>Partition p gets the unfenced brokers, sorted by id, round-robin from the p-th, and only if
 * they are too few, the fenced ones the same way. Too few brokers in all, or no unfenced one, is
 * INVALID_REPLICATION_FACTOR, as with Kafka's placer.
 */
final class ProfilePlacer implements ReplicaPlacer {
    @Override
    public TopicAssignment place(PlacementSpec placement, ClusterDescriber cluster) {
        List<Integer> unfenced = new ArrayList<>();
        List<Integer> fenced = new ArrayList<>();
        for (Iterator<UsableBroker> it = cluster.usableBrokers(); it.hasNext(); ) {
            UsableBroker broker = it.next();
            (broker.fenced() ? fenced : unfenced).add(broker.id());
        }
        unfenced.sort(null);
        fenced.sort(null);
        int factor = placement.numReplicas();
        if (factor < 1 || factor > unfenced.size() + fenced.size()) {
            throw new InvalidReplicationFactorException("The target replication factor of " + factor
                + " cannot be reached because only " + (unfenced.size() + fenced.size()) + " broker(s) are usable.");
        }
        if (unfenced.isEmpty()) {
            throw new InvalidReplicationFactorException("All brokers are currently fenced.");
        }
        int fromUnfenced = Math.min(factor, unfenced.size());
        List<PartitionAssignment> partitions = new ArrayList<>();
        for (int i = 0; i < placement.numPartitions(); i++) {
            int p = placement.startPartition() + i;
            List<Integer> replicas = new ArrayList<>();
            for (int j = 0; j < fromUnfenced; j++) {
                replicas.add(unfenced.get((p + j) % unfenced.size()));
            }
            for (int j = 0; j < factor - fromUnfenced; j++) {
                replicas.add(fenced.get((p + j) % fenced.size()));
            }
            partitions.add(new PartitionAssignment(replicas, cluster));
        }
        return new TopicAssignment(partitions);
    }
}
