package dev.kraftspec.cluster;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;

/**
 * kraftspec's driver of a real Kafka cluster in tests: each command line names one bootstrap
 * address and a sequence of operations, run in order with Kafka's Admin client. Every wait has a
 * deadline; a failure prints one line naming the operation and exits with status 1.
 *
 * <pre>
 * Driver HOST:PORT op [args] op [args] ...
 *   wait-brokers IDS MILLIS              until describeCluster lists exactly the broker ids IDS (1,2)
 *   create-topic NAME PARTITIONS RF      and wait until its partitions have leaders
 *   reassign TOPIC PARTITION IDS MILLIS  alterPartitionReassignments, then wait until the partition's
 *                                        replicas and ISR are IDS and no reassignment is listed
 *   delete-topic NAME MILLIS             and wait until listTopics no longer names it
 *   describe                             print one line per topic: NAME TOPIC_ID PARTITIONS
 * </pre>
 */
public final class Driver {
    private static final long POLL_MILLIS = 100;

    private Driver() {
    }

    public static void main(String[] args) {
        if (args.length < 1) {
            System.err.println("usage: Driver HOST:PORT operation [arguments] ...");
            System.exit(2);
        }
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "3000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "5000");
        props.put(AdminClientConfig.RETRY_BACKOFF_MS_CONFIG, "100");
        props.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "200");
        String current = "";
        try (Admin admin = Admin.create(props)) {
            int i = 1;
            while (i < args.length) {
                String op = args[i];
                current = op;
                switch (op) {
                    case "wait-brokers" -> {
                        waitBrokers(admin, ids(args[i + 1]), Long.parseLong(args[i + 2]));
                        i += 3;
                    }
                    case "create-topic" -> {
                        createTopic(admin, args[i + 1], Integer.parseInt(args[i + 2]), Short.parseShort(args[i + 3]));
                        i += 4;
                    }
                    case "reassign" -> {
                        reassign(admin, args[i + 1], Integer.parseInt(args[i + 2]), ids(args[i + 3]), Long.parseLong(args[i + 4]));
                        i += 5;
                    }
                    case "delete-topic" -> {
                        deleteTopic(admin, args[i + 1], Long.parseLong(args[i + 2]));
                        i += 3;
                    }
                    case "describe" -> {
                        describe(admin);
                        i += 1;
                    }
                    default -> throw new IllegalArgumentException("unknown operation " + op);
                }
                System.out.println("ok " + op);
                System.out.flush();
            }
        } catch (ArrayIndexOutOfBoundsException e) {
            System.err.println(current + ": missing arguments");
            System.exit(2);
        } catch (Exception e) {
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            System.err.println(current + " failed: " + cause.getClass().getSimpleName() + ": " + cause.getMessage());
            System.exit(1);
        }
    }

    private static List<Integer> ids(String text) {
        return Arrays.stream(text.split(",")).map(String::trim).map(Integer::valueOf).collect(Collectors.toList());
    }

    private static long deadline(long millis) {
        return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    }

    private static void pause(long deadline, String what) throws InterruptedException {
        if (System.nanoTime() > deadline) {
            throw new IllegalStateException("gave up waiting: " + what);
        }
        Thread.sleep(POLL_MILLIS);
    }

    private static void waitBrokers(Admin admin, List<Integer> expected, long millis) throws InterruptedException {
        long until = deadline(millis);
        Set<Integer> want = new TreeSet<>(expected);
        Set<Integer> seen = Set.of();
        while (true) {
            try {
                Collection<Node> nodes = admin.describeCluster().nodes().get(2, TimeUnit.SECONDS);
                seen = nodes.stream().map(Node::id).collect(Collectors.toCollection(TreeSet::new));
                if (seen.equals(want)) {
                    return;
                }
            } catch (Exception e) {
                // not up yet: try again until the deadline
            }
            pause(until, "brokers " + want + " (last seen " + seen + ")");
        }
    }

    private static void createTopic(Admin admin, String name, int partitions, short rf) throws Exception {
        admin.createTopics(List.of(new NewTopic(name, partitions, rf))).all().get(10, TimeUnit.SECONDS);
        long until = deadline(30_000);
        while (true) {
            Optional<TopicDescription> topic = describeTopic(admin, name);
            if (topic.isPresent() && topic.get().partitions().size() == partitions
                && topic.get().partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty())) {
                return;
            }
            pause(until, "leaders for the partitions of " + name);
        }
    }

    private static Optional<TopicDescription> describeTopic(Admin admin, String name) {
        try {
            Map<String, TopicDescription> all = admin.describeTopics(List.of(name)).allTopicNames().get(5, TimeUnit.SECONDS);
            return Optional.ofNullable(all.get(name));
        } catch (Exception e) {
            return Optional.empty();
        }
    }

    private static void reassign(Admin admin, String topic, int partition, List<Integer> target, long millis) throws Exception {
        TopicPartition tp = new TopicPartition(topic, partition);
        admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(target))))
            .all().get(10, TimeUnit.SECONDS);
        long until = deadline(millis);
        Set<Integer> want = new HashSet<>(target);
        while (true) {
            boolean listed = true;
            try {
                listed = admin.listPartitionReassignments(Set.of(tp)).reassignments().get(5, TimeUnit.SECONDS).containsKey(tp);
            } catch (Exception e) {
                // try again
            }
            Optional<TopicDescription> description = describeTopic(admin, topic);
            if (!listed && description.isPresent()) {
                TopicPartitionInfo info = description.get().partitions().get(partition);
                Set<Integer> replicas = info.replicas().stream().map(Node::id).collect(Collectors.toSet());
                Set<Integer> isr = info.isr().stream().map(Node::id).collect(Collectors.toSet());
                if (replicas.equals(want) && isr.equals(want)) {
                    return;
                }
            }
            pause(until, "the reassignment of " + tp + " to " + target);
        }
    }

    private static void deleteTopic(Admin admin, String name, long millis) throws Exception {
        admin.deleteTopics(List.of(name)).all().get(10, TimeUnit.SECONDS);
        long until = deadline(millis);
        while (admin.listTopics().names().get(5, TimeUnit.SECONDS).contains(name)) {
            pause(until, "the deletion of " + name);
        }
    }

    private static void describe(Admin admin) throws Exception {
        Set<String> names = new TreeSet<>(admin.listTopics().names().get(5, TimeUnit.SECONDS));
        Map<String, TopicDescription> all = admin.describeTopics(names).allTopicNames().get(5, TimeUnit.SECONDS);
        List<String> lines = new ArrayList<>();
        for (String name : names) {
            TopicDescription d = all.get(name);
            lines.add("topic " + name + " " + d.topicId() + " " + d.partitions().size());
        }
        lines.forEach(System.out::println);
    }
}
