package dev.kraftspec.kafka;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.controller.ControllerRequestContext;
import org.apache.kafka.controller.QuorumController;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.raft.Batch;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * Kafka's QuorumController measured warm, in process, without the conformance protocol: the
 * workloads {@code kraftspec bench kafka} also runs against kraftspec's impl, so that the two can
 * be compared within one run.
 *
 * <p>The cluster: {@code --brokers} registered, unfenced brokers and one topic of
 * {@code --partitions} partitions, replication factor 3, made through the controller's own API.
 * The Raft client then commits every batch as soon as it is appended (a quorum of one), so that
 * many requests can be in flight at once: the controller handles them on its event thread and
 * completes each reply when its records commit. A figure is completed requests per second, from
 * the first request sent to the last reply completed.
 *
 * <p>Commands, one a line on stdin, each answered by one JSON line on stdout:
 * <ul>
 * <li>{@code heartbeats COUNT}: COUNT heartbeats from the brokers in turn, each from an unfenced,
 * caught-up broker (no record), at most {@code --window} in flight;</li>
 * <li>{@code mix ROUNDS}: ROUNDS rounds of one AlterPartition request per partition, from its
 * leader, that alternately shrinks the ISR to its first two replicas and expands it back (one
 * partition change record each); the requests of a round are in flight together;</li>
 * <li>{@code quit}.</li>
 * </ul>
 * The first line written says the cluster is ready. Any failure is one line {@code {"error": ...}}
 * and exit status 1.
 *
 * <p>{@code --mode fence} builds another cluster instead: {@code --brokers} brokers and topics of
 * 1,000 partitions, {@code --partitions} in all, each placed by an explicit assignment on brokers
 * p, p+1 and p+2 (mod the broker count), so that each broker leads partitions/brokers partitions
 * and follows twice as many, as in impl's benchmark cluster. Its one command, {@code fence
 * BROKER}, is a heartbeat from that broker asking to be fenced (WantFence), timed until its reply
 * completes, which is once every partition change and the fencing record are committed.
 *
 * <p>{@code --mode write-snapshot --snapshot DIR} writes, with Kafka's snapshot writer, a snapshot
 * of such a cluster into DIR and answers one line; {@code --mode load-snapshot --snapshot DIR} loads
 * it, in this fresh JVM, as Kafka loads metadata (its snapshot reader, a MetadataDelta, the
 * MetadataImage) and answers the time and the heap it took (see {@link Snapshots}).
 *
 * <p>Usage: {@code java -cp CLASSPATH dev.kraftspec.kafka.Bench --schemas DIR [--metadata-version
 * 3.7-IV1] [--brokers 10] [--partitions 1000] [--window 1000] [--mode bench|fence|write-snapshot|load-snapshot]
 * [--snapshot DIR]}.
 */
public final class Bench {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final String TOPIC = "bench";
    private static final String CLUSTER_ID = "kraftspec-bench";

    private final QuorumController controller;
    private final MemoryRaft raft;
    private final MetadataVersion metadataVersion;
    private final int brokers;
    private final int window;
    private final long[] brokerEpochs;
    private Uuid topicId;
    /** Per partition: its replicas (the first leads), leader epoch and partition epoch. */
    private int[][] replicas;
    private int[] leaderEpochs;
    private int[] partitionEpochs;
    private boolean shrunk = false; // whether every ISR is its partition's first two replicas

    private Bench(Session session, MetadataVersion metadataVersion, int brokers, int window) {
        this.controller = session.controller();
        this.raft = session.raft();
        this.metadataVersion = metadataVersion;
        this.brokers = brokers;
        this.window = window;
        this.brokerEpochs = new long[brokers];
        raft.autoCommit();
    }

    public static void main(String[] args) throws Exception {
        Path schemas = null;
        String mv = "3.7-IV1";
        int brokers = 10;
        int partitions = 1000;
        int window = 1000;
        String mode = "bench";
        Path snapshot = null;
        for (int i = 0; i < args.length; i++) {
            String value = i + 1 < args.length ? args[i + 1] : null;
            if (value == null) {
                usage("option " + args[i] + " needs a value");
            }
            switch (args[i]) {
                case "--schemas" -> schemas = Path.of(value);
                case "--metadata-version" -> mv = value;
                case "--brokers" -> brokers = positive(args[i], value);
                case "--partitions" -> partitions = positive(args[i], value);
                case "--window" -> window = positive(args[i], value);
                case "--mode" -> mode = value;
                case "--snapshot" -> snapshot = Path.of(value);
                default -> usage("unknown argument: " + args[i]);
            }
            i++;
        }
        if (schemas == null) {
            usage("--schemas DIR (kraftspec's spec/schemas/rpcs) is required");
        }
        if (brokers < 3) {
            usage("--brokers must be at least 3 (replication factor 3)");
        }
        if (!List.of("bench", "fence", "write-snapshot", "load-snapshot").contains(mode)) {
            usage("--mode is bench, fence, write-snapshot or load-snapshot, not '" + mode + "'");
        }
        if (mode.endsWith("-snapshot") && snapshot == null) {
            usage("--mode " + mode + " needs --snapshot DIR");
        }
        PrintStream out = System.out;
        System.setOut(System.err); // stdout carries the answers and nothing else
        if (mode.endsWith("-snapshot")) {
            try {
                out.println(mode.equals("write-snapshot")
                    ? MAPPER.createObjectNode().put("records", Snapshots.write(snapshot, Main.metadataVersion(mv), brokers, partitions))
                    : loadSnapshot(snapshot));
                out.flush();
            } catch (Exception e) {
                Throwable cause = Session.unwrap(e);
                out.println(MAPPER.createObjectNode().put("error", cause.getClass().getSimpleName() + ": " + cause.getMessage()));
                out.flush();
                cause.printStackTrace(System.err);
                System.exit(1);
            }
            System.exit(0);
        }
        boolean fence = mode.equals("fence");
        ObjectNode config = MAPPER.createObjectNode().put("cluster_id", CLUSTER_ID).put("session_timeout_ms", 18000);
        config.putArray("finalized_features").addArray().add("metadata.format").add(1).add(1);
        MetadataVersion metadataVersion = Main.metadataVersion(mv);
        try (Session session = new Session(config, metadataVersion, new Neutral(schemas))) {
            Bench bench = new Bench(session, metadataVersion, brokers, window);
            if (fence) {
                bench.setUpRoundRobin(partitions);
            } else {
                bench.setUp(partitions);
            }
            out.println(MAPPER.createObjectNode().put("ready", true).put("kafka", Main.kafkaVersion())
                .put("metadata_version", mv).put("brokers", brokers).put("partitions", partitions));
            out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null && !line.isBlank() && !line.equals("quit")) {
                String[] words = line.trim().split("\\s+");
                List<String> commands = fence ? List.of("fence") : List.of("heartbeats", "mix");
                if (words.length != 2 || !commands.contains(words[0])) {
                    throw new IllegalArgumentException("unknown command '" + line + "': expected "
                        + (fence ? "fence BROKER" : "heartbeats COUNT, mix ROUNDS") + " or quit");
                }
                ObjectNode answer = words[0].equals("fence") ? bench.fence(Integer.parseInt(words[1]))
                    : words[0].equals("heartbeats") ? bench.heartbeats(positive(words[0], words[1]))
                    : bench.mix(positive(words[0], words[1]));
                out.println(answer.put("op", words[0]));
                out.flush();
            }
        } catch (Exception e) {
            Throwable cause = Session.unwrap(e);
            out.println(MAPPER.createObjectNode().put("error", cause.getClass().getSimpleName() + ": " + cause.getMessage()));
            out.flush();
            cause.printStackTrace(System.err);
            System.exit(1);
        }
        System.exit(0);
    }

    // ---- the cluster ----

    private void setUp(int partitions) throws Exception {
        registerAll();
        CreateTopicsRequestData create = new CreateTopicsRequestData().setTimeoutMs(30000);
        create.topics().add(new CreateTopicsRequestData.CreatableTopic().setName(TOPIC)
            .setNumPartitions(partitions).setReplicationFactor((short) 3));
        CreateTopicsResponseData created = Compat.createTopics(controller, context(ApiKeys.CREATE_TOPICS, 7), create,
            Set.of(TOPIC)).get(30, TimeUnit.SECONDS);
        CreateTopicsResponseData.CreatableTopicResult result = created.topics().find(TOPIC);
        if (result == null || result.errorCode() != Errors.NONE.code()) {
            throw new IllegalStateException("creating the topic failed: " + created);
        }
        topicId = result.topicId();
        // The partitions as the controller placed them, from the records it appended.
        replicas = new int[partitions][];
        leaderEpochs = new int[partitions];
        partitionEpochs = new int[partitions];
        for (Batch<ApiMessageAndVersion> batch : raft.drainAppended()) {
            for (ApiMessageAndVersion amv : batch.records()) {
                if (amv.message() instanceof PartitionRecord record && record.topicId().equals(topicId)) {
                    int p = record.partitionId();
                    replicas[p] = record.replicas().stream().mapToInt(Integer::intValue).toArray();
                    leaderEpochs[p] = record.leaderEpoch();
                    partitionEpochs[p] = record.partitionEpoch();
                    if (record.leader() != replicas[p][0] || record.isr().size() != 3) {
                        throw new IllegalStateException("partition " + p + " was created with leader " + record.leader()
                            + " and ISR " + record.isr() + ", expected its first replica and all three");
                    }
                }
            }
        }
        for (int p = 0; p < partitions; p++) {
            if (replicas[p] == null) {
                throw new IllegalStateException("no PartitionRecord for partition " + p);
            }
        }
    }

    /**
     * The fencing benchmark's cluster: registered, unfenced brokers, then topics of
     * {@link Snapshots#TOPIC_SIZE} partitions each, partition p assigned to brokers p, p+1 and p+2
     * (mod the broker count), created a few requests at a time.
     */
    private void setUpRoundRobin(int partitions) throws Exception {
        registerAll();
        int topics = Math.max(1, partitions / Snapshots.TOPIC_SIZE);
        List<CompletableFuture<CreateTopicsResponseData>> pending = new ArrayList<>();
        for (int t = 0; t < topics; t++) {
            String name = String.format("topic-%05d", t);
            CreateTopicsRequestData.CreatableTopic topic = new CreateTopicsRequestData.CreatableTopic().setName(name)
                .setNumPartitions(-1).setReplicationFactor((short) -1);
            for (int i = 0; i < Math.min(Snapshots.TOPIC_SIZE, partitions); i++) {
                int p = t * Snapshots.TOPIC_SIZE + i;
                topic.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment().setPartitionIndex(i)
                    .setBrokerIds(List.of(p % brokers, (p + 1) % brokers, (p + 2) % brokers)));
            }
            CreateTopicsRequestData create = new CreateTopicsRequestData().setTimeoutMs(30000);
            create.topics().add(topic);
            pending.add(Compat.createTopics(controller, context(ApiKeys.CREATE_TOPICS, 7), create, Set.of(name)));
            if (pending.size() >= 8 || t == topics - 1) {
                for (CompletableFuture<CreateTopicsResponseData> reply : pending) {
                    for (CreateTopicsResponseData.CreatableTopicResult result : reply.get(120, TimeUnit.SECONDS).topics()) {
                        if (result.errorCode() != Errors.NONE.code()) {
                            throw new IllegalStateException("creating topic " + result.name() + " failed: " + result);
                        }
                    }
                }
                pending.clear();
                recordsAppended(); // the log keeps nothing it need not
            }
        }
    }

    /** Registers every broker and unfences it with a caught-up heartbeat. */
    private void registerAll() throws Exception {
        for (int b = 0; b < brokers; b++) {
            BrokerRegistrationRequestData request = new BrokerRegistrationRequestData()
                .setBrokerId(b)
                .setClusterId(CLUSTER_ID)
                .setIncarnationId(new Uuid(0x6b72616674L, b + 1))
                .setIsMigratingZkBroker(false)
                .setPreviousBrokerEpoch(-1L);
            short level = metadataVersion.featureLevel();
            request.features().add(new BrokerRegistrationRequestData.Feature()
                .setName(MetadataVersion.FEATURE_NAME).setMinSupportedVersion(level).setMaxSupportedVersion(level));
            if (metadataVersion.isDirectoryAssignmentSupported()) {
                request.setLogDirs(List.of(new Uuid(0x6b72616674L, b + 1)));
            }
            brokerEpochs[b] = controller.registerBroker(context(ApiKeys.BROKER_REGISTRATION, 3), request)
                .get(30, TimeUnit.SECONDS).epoch();
        }
        for (int b = 0; b < brokers; b++) {
            // the reply's class moved package between releases, hence var
            var reply = controller.processBrokerHeartbeat(context(ApiKeys.BROKER_HEARTBEAT, 0),
                heartbeat(b)).get(30, TimeUnit.SECONDS);
            if (reply.isFenced()) {
                throw new IllegalStateException("broker " + b + " is still fenced after a caught-up heartbeat");
            }
        }
    }

    /** A heartbeat asking to fence {@code broker}, timed until its reply completes (its records committed). */
    private ObjectNode fence(int broker) throws Exception {
        if (broker < 0 || broker >= brokers) {
            throw new IllegalArgumentException("no broker " + broker + " (there are " + brokers + ")");
        }
        recordsAppended();
        BrokerHeartbeatRequestData request = heartbeat(broker).setWantFence(true);
        ControllerRequestContext context = context(ApiKeys.BROKER_HEARTBEAT, 0);
        long cpuStart = cpuNanos();
        long start = System.nanoTime();
        var reply = controller.processBrokerHeartbeat(context, request).get(60, TimeUnit.SECONDS);
        long nanos = System.nanoTime() - start;
        long cpu = cpuNanos() - cpuStart;
        if (!reply.isFenced()) {
            throw new IllegalStateException("broker " + broker + " asked to be fenced and was answered unfenced");
        }
        return answer(1, nanos, cpu);
    }

    /** {@code --mode load-snapshot}: the time and the heap that loading the snapshot took. */
    private static ObjectNode loadSnapshot(Path directory) throws Exception {
        long before = heapAfterGc();
        Snapshots.Loaded loaded = Snapshots.load(directory);
        long after = heapAfterGc();
        ObjectNode answer = MAPPER.createObjectNode().put("seconds", loaded.nanos() / 1e9).put("bytes", after - before)
            .put("partitions", loaded.partitions());
        if (loaded.image().isEmpty()) { // keeps the image reachable until the heap is measured
            throw new IllegalStateException("the snapshot loaded into an empty image");
        }
        return answer;
    }

    /** The heap in use once the collector has run (twice, so that what the first freed is gone). */
    private static long heapAfterGc() {
        Runtime runtime = Runtime.getRuntime();
        System.gc();
        System.gc();
        return runtime.totalMemory() - runtime.freeMemory();
    }

    /** The number of records appended since the last call. */
    private long recordsAppended() {
        long n = 0;
        for (Batch<ApiMessageAndVersion> batch : raft.drainAppended()) {
            n += batch.records().size();
        }
        return n;
    }

    // ---- the workloads ----

    private BrokerHeartbeatRequestData heartbeat(int broker) {
        return new BrokerHeartbeatRequestData().setBrokerId(broker).setBrokerEpoch(brokerEpochs[broker])
            .setCurrentMetadataOffset(Long.MAX_VALUE / 2).setWantFence(false).setWantShutDown(false);
    }

    private ObjectNode heartbeats(int count) throws Exception {
        BrokerHeartbeatRequestData[] requests = new BrokerHeartbeatRequestData[brokers];
        for (int b = 0; b < brokers; b++) {
            requests[b] = heartbeat(b);
        }
        ControllerRequestContext context = context(ApiKeys.BROKER_HEARTBEAT, 0);
        Semaphore inFlight = new Semaphore(window);
        List<Throwable> failures = new ArrayList<>();
        long cpuStart = cpuNanos();
        long start = System.nanoTime();
        for (int i = 0; i < count; i++) {
            inFlight.acquire();
            controller.processBrokerHeartbeat(context, requests[i % brokers]).whenComplete((reply, error) -> {
                if (error != null || reply.isFenced()) {
                    synchronized (failures) {
                        failures.add(error != null ? error : new IllegalStateException("a heartbeat was answered fenced"));
                    }
                }
                inFlight.release();
            });
        }
        inFlight.acquire(window); // every reply completed
        long nanos = System.nanoTime() - start;
        long cpu = cpuNanos() - cpuStart;
        inFlight.release(window);
        if (!failures.isEmpty()) {
            throw new IllegalStateException(failures.size() + " heartbeats failed, the first: " + Session.unwrap(failures.get(0)));
        }
        return answer(count, nanos, cpu);
    }

    private ObjectNode mix(int rounds) throws Exception {
        ControllerRequestContext context = context(ApiKeys.ALTER_PARTITION, 2);
        int partitions = replicas.length;
        long nanos = 0;
        long cpu = 0;
        for (int round = 0; round < rounds; round++) {
            List<CompletableFuture<AlterPartitionResponseData>> replies = new ArrayList<>(partitions);
            long cpuStart = cpuNanos();
            long start = System.nanoTime();
            for (int p = 0; p < partitions; p++) {
                int[] r = replicas[p];
                List<Integer> isr = shrunk ? List.of(r[0], r[1], r[2]) : List.of(r[0], r[1]);
                AlterPartitionRequestData request = new AlterPartitionRequestData().setBrokerId(r[0])
                    .setBrokerEpoch(brokerEpochs[r[0]]);
                request.topics().add(new AlterPartitionRequestData.TopicData().setTopicId(topicId)
                    .setPartitions(List.of(new AlterPartitionRequestData.PartitionData().setPartitionIndex(p)
                        .setLeaderEpoch(leaderEpochs[p]).setPartitionEpoch(partitionEpochs[p]).setNewIsr(isr)
                        .setLeaderRecoveryState((byte) 0))));
                replies.add(controller.alterPartition(context, request));
            }
            CompletableFuture.allOf(replies.toArray(new CompletableFuture<?>[0])).get(60, TimeUnit.SECONDS);
            nanos += System.nanoTime() - start;
            cpu += cpuNanos() - cpuStart;
            for (CompletableFuture<AlterPartitionResponseData> reply : replies) {
                AlterPartitionResponseData response = reply.join();
                if (response.errorCode() != Errors.NONE.code()) {
                    throw new IllegalStateException("AlterPartition refused: " + response);
                }
                for (AlterPartitionResponseData.PartitionData data : response.topics().get(0).partitions()) {
                    if (data.errorCode() != Errors.NONE.code()) {
                        throw new IllegalStateException("AlterPartition refused a partition: " + data);
                    }
                    leaderEpochs[data.partitionIndex()] = data.leaderEpoch();
                    partitionEpochs[data.partitionIndex()] = data.partitionEpoch();
                }
            }
            shrunk = !shrunk;
        }
        return answer((long) rounds * partitions, nanos, cpu);
    }

    // ---- helpers ----

    /** A workload's answer: requests completed, wall and CPU seconds, and the records they appended. */
    private ObjectNode answer(long count, long nanos, long cpuNanos) {
        return MAPPER.createObjectNode().put("count", count).put("seconds", nanos / 1e9)
            .put("cpu_seconds", cpuNanos / 1e9).put("records", recordsAppended());
    }

    /** The CPU time of the whole JVM so far: every thread's, the controller's event thread among them. */
    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    private static ControllerRequestContext context(ApiKeys key, int version) {
        return new ControllerRequestContext(new RequestHeaderData().setRequestApiKey(key.id)
            .setRequestApiVersion((short) version), KafkaPrincipal.ANONYMOUS, OptionalLong.empty());
    }

    private static int positive(String what, String text) {
        try {
            int n = Integer.parseInt(text);
            if (n > 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        usage(what + " must be a positive whole number, not '" + text + "'");
        return 0;
    }

    private static void usage(String problem) {
        System.err.println("Bench: " + problem);
        System.err.println("usage: java -cp CLASSPATH dev.kraftspec.kafka.Bench --schemas DIR [--metadata-version 3.7-IV1]"
            + " [--brokers 10] [--partitions 1000] [--window 1000] [--mode bench|fence|write-snapshot|load-snapshot] [--snapshot DIR]");
        System.exit(2);
    }
}
