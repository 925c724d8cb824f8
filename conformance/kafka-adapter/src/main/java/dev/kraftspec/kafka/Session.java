package dev.kraftspec.kafka;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.message.AlterPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerHeartbeatResponseData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.BrokerRegistrationResponseData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.message.ListPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.ListPartitionReassignmentsResponseData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.UnregisterBrokerResponseData;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.controller.ControllerRequestContext;
import org.apache.kafka.controller.QuorumController;
import org.apache.kafka.controller.QuorumFeatures;
import org.apache.kafka.controller.ResultOrError;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;
import org.apache.kafka.image.writer.ImageWriterOptions;
import org.apache.kafka.image.writer.RecordListWriter;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.metadata.bootstrap.BootstrapMetadata;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.raft.Batch;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.server.fault.FaultHandler;

/**
 * One trace: a fresh Kafka {@link QuorumController}, its {@link MemoryRaft} and its clock, driven
 * by the trace's events. Every request goes to the controller through its public API, as Kafka's
 * ControllerApis sends it; the adapter waits until the controller's event queue is idle before it
 * reads what the event did (records appended, replies completed), so each step's result is exact.
 */
final class Session implements AutoCloseable {
    /**
     * The metadata.version Kafka runs at: the trace's own when its finalized features name
     * metadata.version, else the adapter's, for which the trace's metadata.format range stands.
     */
    private final MetadataVersion metadataVersion;
    /**
     * Whether the trace finalizes metadata.version itself: then registrations' features go to Kafka
     * as they are; otherwise metadata.format is translated (formatRange).
     */
    private final boolean featuresAsGiven;
    private final MockClock clock = new MockClock();
    private final MemoryRaft raft = new MemoryRaft(clock);
    private final QuorumController controller;
    private final Neutral neutral;
    private final boolean kafkaMessages;
    private final List<Pending> pending = new ArrayList<>();
    private final Map<String, String> kafkaToTraceId = new HashMap<>();
    private final Map<String, String> traceToKafkaId = new HashMap<>();
    private final Map<String, String> createdNameToTraceId = new HashMap<>();
    /** Topic names by the trace's topic id, from the TopicRecords seen: the order of B25's normalization. */
    private final Map<String, String> topicNames = new HashMap<>();
    private final int[] formatRange;
    /** DEC-2: in the kip-631 profile a heartbeat's offset is one more than Kafka's. */
    private final long heartbeatOffsetShift;
    private final List<String> faults = new ArrayList<>();
    private int nextSeq = 0;
    private MetadataImage committedImage = MetadataImage.EMPTY;

    private record Pending(int seq, String api, int version, JsonNode request, CompletableFuture<JsonNode> reply) {
    }

    /** Whether the session speaks the kafka profile's messages (DEC-9), which Kafka's replies match field for field. */
    boolean kafkaMessages() {
        return kafkaMessages;
    }

    /**
     * {@code adapterMetadataVersion}: the adapter's metadata.version (--metadata-version), for a
     * trace whose finalized features do not name metadata.version.
     */
    Session(JsonNode config, MetadataVersion adapterMetadataVersion, Neutral neutral) throws Exception {
        JsonNode finalized = config.get("finalized_features");
        int[] traceLevels = featureRange(finalized, MetadataVersion.FEATURE_NAME);
        this.featuresAsGiven = traceLevels != null;
        this.metadataVersion = featuresAsGiven ? traceMetadataVersion(traceLevels) : adapterMetadataVersion;
        int[] format = featureRange(finalized, "metadata.format");
        this.formatRange = format != null ? format : new int[] {0, 0};
        JsonNode profile = config.get("profile");
        boolean kafkaProfile = profile != null && profile.asText().equals("kafka");
        this.neutral = kafkaProfile ? neutral.withKafkaMessages() : neutral; // DEC-9: the profile's messages
        this.kafkaMessages = kafkaProfile;
        this.heartbeatOffsetShift = kafkaProfile ? 0 : 1;
        long sessionMs = config.get("session_timeout_ms").asLong();
        FaultHandler faults = (message, cause) -> {
            this.faults.add(message + (cause == null ? "" : ": " + cause));
            return new RuntimeException(message, cause);
        };
        // The two topic settings the controller reads while it changes partitions, at Kafka's defaults.
        ConfigDef topicConfigs = new ConfigDef()
            .define("min.insync.replicas", ConfigDef.Type.INT, 1, ConfigDef.Importance.HIGH, "")
            .define("unclean.leader.election.enable", ConfigDef.Type.BOOLEAN, false, ConfigDef.Importance.HIGH, "");
        controller = new QuorumController.Builder(MemoryRaft.SELF, config.get("cluster_id").asText())
            .setTime(clock)
            .setThreadNamePrefix("kraftspec-kafka-")
            .setRaftClient(raft.asClient())
            .setQuorumFeatures(new QuorumFeatures(MemoryRaft.SELF, QuorumFeatures.defaultSupportedFeatureMap(true),
                List.of(MemoryRaft.SELF)))
            .setBootstrapMetadata(BootstrapMetadata.fromVersion(metadataVersion, "kraftspec trace"))
            .setConfigSchema(new KafkaConfigSchema(
                Map.of(ConfigResource.Type.TOPIC, topicConfigs, ConfigResource.Type.BROKER, topicConfigs), Map.of()))
            .setSessionTimeoutNs(TimeUnit.MILLISECONDS.toNanos(sessionMs))
            // DEC-26: Kafka's placer chooses at random. Under the kafka profile the adapter plugs in
            // the profile's deterministic placement instead (a stand-in, see ProfilePlacer); under
            // kip-631 Kafka's own placer runs, seeded, and its choices are part of what differs.
            .setReplicaPlacer(kafkaProfile ? new ProfilePlacer() : new StripedReplicaPlacer(new Random(0)))
            .setLeaderImbalanceCheckIntervalNs(OptionalLong.empty())
            .setMaxIdleIntervalNs(OptionalLong.empty())
            .setUncleanLeaderElectionCheckIntervalMs(TimeUnit.DAYS.toMillis(365 * 100))
            .setMetrics(Compat.metrics(clock))
            .setFatalFaultHandler(faults)
            .setNonFatalFaultHandler(faults)
            .build();
        // LOG-14: the finalized features are the first committed batch, at offset 0, so the
        // controller finds a non-empty log, writes no bootstrap records, and the next record
        // appended gets offset 1, as in the trace.
        raft.appendCommitted(List.of(new ApiMessageAndVersion(new FeatureLevelRecord()
            .setName(MetadataVersion.FEATURE_NAME).setFeatureLevel(metadataVersion.featureLevel()), (short) 0)));
        observeCommitted(raft.commit(1));
        raft.elect(MemoryRaft.SELF);
        awaitIdle();
        requireActive();
    }

    /** Handles one event of the trace and returns the {@code result} fields: seq, records, replies. */
    ObjectNode handle(JsonNode event) throws Exception {
        ObjectNode result = Neutral.JSON.objectNode();
        String kind = event.get("kind").asText();
        switch (kind) {
            case "request" -> {
                int seq = nextSeq++;
                result.put("seq", seq);
                request(seq, event);
            }
            case "tick" -> {
                result.putNull("seq");
                clock.advanceTo(event.get("now_ms").asLong());
                awaitQuiet();
            }
            case "commit" -> {
                result.putNull("seq");
                observeCommitted(raft.commit(event.get("offset").asLong()));
                awaitQuiet();
            }
            case "failover" -> {
                result.putNull("seq");
                failover();
            }
            case "snapshot" -> {
                // Kafka's controller does not take snapshots itself (the metadata loader does), and
                // a snapshot changes nothing an observer of the controller sees.
                result.putNull("seq");
            }
            default -> throw new UnsupportedOperationException("event kind '" + kind + "' is not known to this adapter");
        }
        if (!faults.isEmpty()) {
            throw new IllegalStateException("Kafka's controller reported a fault: " + String.join("; ", faults));
        }
        ArrayNode records = Neutral.JSON.arrayNode();
        for (Batch<ApiMessageAndVersion> batch : raft.drainAppended()) {
            long offset = batch.baseOffset();
            List<ObjectNode> inBatch = new ArrayList<>();
            for (ApiMessageAndVersion amv : batch.records()) {
                ObjectNode record = neutral.record(offset++, amv);
                learnTopicId(record);
                List<String> kafkaIds = new ArrayList<>();
                Neutral.mapTopicIds(record.get("data"), id -> {
                    kafkaIds.add(id);
                    return toTraceId(id);
                });
                record.put("frame", traceIdsInFrame(record.get("frame").asText(), kafkaIds));
                inBatch.add(record);
            }
            for (ObjectNode record : topicsInNameOrder(inBatch, batch.baseOffset())) {
                records.add(record);
            }
        }
        result.set("records", records);
        result.set("replies", releasedReplies());
        return result;
    }

    // ---- requests ----

    private void request(int seq, JsonNode event) throws Exception {
        String api = event.get("api").asText();
        int version = event.get("version").asInt();
        JsonNode body = event.get("body");
        CompletableFuture<JsonNode> reply;
        int replyVersion = version;
        if (!supportedVersion(api, version)) {
            // RPC-2: refused in version 0 of the response (Kafka's network layer refuses it too).
            replyVersion = 0;
            reply = CompletableFuture.completedFuture(
                neutral.shaped(api, 0, errorBody(api, 0, body, Errors.UNSUPPORTED_VERSION.code())));
        } else {
            reply = translated(api, body, version);
            reply = reply.exceptionally(e -> neutral.shaped(api, version,
                errorBody(api, version, body, ApiError.fromThrowable(unwrap(e)).error().code())));
        }
        pending.add(new Pending(seq, api, replyVersion, body, reply));
        awaitQuiet();
    }

    /** The request handed to the controller; a body Kafka's messages cannot carry is named in the error. */
    private CompletableFuture<JsonNode> translated(String api, JsonNode body, int version) throws Exception {
        try {
            return switch (api) {
                case "BrokerRegistration" -> registerBroker(body, version);
                case "BrokerHeartbeat" -> heartbeat(body, version);
                case "UnregisterBroker" -> controller.unregisterBroker(context(ApiKeys.UNREGISTER_BROKER, 0),
                        body.get("BrokerId").asInt())
                    .thenApply(v -> neutral.reply(api, version, new UnregisterBrokerResponseData(), (short) 0));
                case "AlterIsr" -> alterPartition(body, version);
                case "CreateTopics" -> createTopics(body, version);
                case "DeleteTopics" -> deleteTopics(body, version);
                case "AlterPartitionReassignments" -> alterReassignments(body, version);
                case "ListPartitionReassignments" -> listReassignments(body, version);
                default -> throw new UnsupportedOperationException("request '" + api + "' is not known to this adapter");
            };
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("this " + api + " request cannot be expressed as Kafka's ("
                + e.getClass().getSimpleName() + ": " + e.getMessage() + "): " + body, e);
        }
    }

    private CompletableFuture<JsonNode> registerBroker(JsonNode body, int version) {
        ObjectNode kafka = body.deepCopy();
        kafka.remove("CurrentMetadataOffset");
        ArrayNode features = Neutral.JSON.arrayNode();
        for (JsonNode f : body.get("Features")) {
            ObjectNode feature = f.deepCopy();
            if (!featuresAsGiven && f.get("Name").asText().equals("metadata.format")) {
                // Kafka keeps one level per feature: a broker that supports the trace's finalized
                // metadata.format range supports the adapter's metadata.version, and one that does not, does not.
                boolean supports = f.get("MinSupportedVersion").asInt() <= formatRange[0]
                    && formatRange[1] <= f.get("MaxSupportedVersion").asInt();
                short level = supports ? metadataVersion.featureLevel() : 0;
                feature.put("Name", MetadataVersion.FEATURE_NAME);
                feature.put("MinSupportedVersion", level);
                feature.put("MaxSupportedVersion", level);
            }
            features.add(feature);
        }
        kafka.set("Features", features);
        kafka.put("IsMigratingZkBroker", false);
        ArrayNode dirs = kafka.putArray("LogDirs");
        if (metadataVersion.isDirectoryAssignmentSupported()) {
            dirs.add(new Uuid(0x6b72616674L, body.get("BrokerId").asLong() + 1).toString());
        }
        kafka.put("PreviousBrokerEpoch", -1L);
        short kafkaVersion = 3;
        BrokerRegistrationRequestData request = (BrokerRegistrationRequestData)
            Neutral.readRequest("BrokerRegistrationRequestData", kafka, kafkaVersion);
        return controller.registerBroker(context(ApiKeys.BROKER_REGISTRATION, kafkaVersion), request)
            .thenApply(r -> neutral.reply("BrokerRegistration", version,
                new BrokerRegistrationResponseData().setBrokerEpoch(r.epoch()), kafkaVersion));
    }

    private CompletableFuture<JsonNode> heartbeat(JsonNode body, int version) {
        ObjectNode kafka = body.deepCopy();
        // DEC-2: in the kip-631 profile CurrentMetadataOffset is one more than the highest offset
        // applied; in the kafka profile, as in Kafka, it is the highest offset applied.
        kafka.put("CurrentMetadataOffset", body.get("CurrentMetadataOffset").asLong() - heartbeatOffsetShift);
        short kafkaVersion = 0;
        BrokerHeartbeatRequestData request = (BrokerHeartbeatRequestData)
            Neutral.readRequest("BrokerHeartbeatRequestData", kafka, kafkaVersion);
        return controller.processBrokerHeartbeat(context(ApiKeys.BROKER_HEARTBEAT, kafkaVersion), request)
            .thenApply(r -> neutral.reply("BrokerHeartbeat", version, new BrokerHeartbeatResponseData()
                .setIsCaughtUp(r.isCaughtUp()).setIsFenced(r.isFenced()).setShouldShutDown(r.shouldShutDown()),
                kafkaVersion));
    }

    private CompletableFuture<JsonNode> alterPartition(JsonNode body, int version) {
        ObjectNode kafka = body.deepCopy();
        Neutral.mapTopicIds(kafka, this::toKafkaId);
        for (JsonNode topic : kafka.get("Topics")) {
            for (JsonNode partition : topic.get("Partitions")) {
                ((ObjectNode) partition).put("LeaderRecoveryState", (byte) 0);
            }
        }
        short kafkaVersion = 2;
        AlterPartitionRequestData request = (AlterPartitionRequestData)
            Neutral.readRequest("AlterPartitionRequestData", kafka, kafkaVersion);
        return controller.alterPartition(context(ApiKeys.ALTER_PARTITION, kafkaVersion), request)
            .thenApply(r -> traceIds(neutral.reply("AlterIsr", version, r, kafkaVersion)));
    }

    private CompletableFuture<JsonNode> createTopics(JsonNode body, int version) {
        ObjectNode kafka = body.deepCopy();
        Set<String> names = new HashSet<>();
        for (JsonNode topic : kafka.get("Topics")) {
            names.add(topic.get("Name").asText());
            createdNameToTraceId.put(topic.get("Name").asText(), topic.get("TopicId").asText());
            ((ObjectNode) topic).remove("TopicId");
            ((ObjectNode) topic).putArray("Configs");
        }
        kafka.put("TimeoutMs", 30000);
        kafka.put("ValidateOnly", false);
        short kafkaVersion = 7;
        CreateTopicsRequestData request = (CreateTopicsRequestData)
            Neutral.readRequest("CreateTopicsRequestData", kafka, kafkaVersion);
        return Compat.createTopics(controller, context(ApiKeys.CREATE_TOPICS, kafkaVersion), request, names)
            .thenApply(r -> traceIds(neutral.reply("CreateTopics", version, r, kafkaVersion)));
    }

    /**
     * As Kafka's ControllerApis does: names are resolved against the committed state first, then
     * the topics found are deleted; each name gets its own result.
     */
    private CompletableFuture<JsonNode> deleteTopics(JsonNode body, int version) throws Exception {
        List<String> names = new ArrayList<>();
        body.get("TopicNames").forEach(n -> names.add(n.asText()));
        ControllerRequestContext context = context(ApiKeys.DELETE_TOPICS, 6);
        Map<String, ResultOrError<Uuid>> ids = controller.findTopicIds(context, names).get(30, TimeUnit.SECONDS);
        Map<Uuid, String> found = new HashMap<>();
        ids.forEach((name, id) -> {
            if (!id.isError()) {
                found.put(id.result(), name);
            }
        });
        return controller.deleteTopics(context, found.keySet()).thenApply(errors -> {
            DeleteTopicsResponseData response = new DeleteTopicsResponseData();
            Set<String> seen = new HashSet<>();
            for (String name : names) {
                ResultOrError<Uuid> id = ids.get(name);
                DeleteTopicsResponseData.DeletableTopicResult result =
                    new DeleteTopicsResponseData.DeletableTopicResult().setName(name);
                if (!seen.add(name)) {
                    result.setErrorCode(Errors.INVALID_REQUEST.code());
                } else if (id == null || id.isError()) {
                    result.setErrorCode(id == null ? Errors.UNKNOWN_TOPIC_OR_PARTITION.code() : id.error().error().code());
                } else {
                    result.setTopicId(id.result()).setErrorCode(errors.get(id.result()).error().code());
                }
                response.responses().add(result);
            }
            return traceIds(neutral.reply("DeleteTopics", version, response, (short) 6));
        });
    }

    private CompletableFuture<JsonNode> alterReassignments(JsonNode body, int version) {
        ObjectNode kafka = body.deepCopy();
        kafka.put("TimeoutMs", 30000);
        short kafkaVersion = 0;
        AlterPartitionReassignmentsRequestData request = (AlterPartitionReassignmentsRequestData)
            Neutral.readRequest("AlterPartitionReassignmentsRequestData", kafka, kafkaVersion);
        return controller.alterPartitionReassignments(context(ApiKeys.ALTER_PARTITION_REASSIGNMENTS, kafkaVersion), request)
            .thenApply(r -> neutral.reply("AlterPartitionReassignments", version, r, kafkaVersion));
    }

    private CompletableFuture<JsonNode> listReassignments(JsonNode body, int version) {
        ObjectNode kafka = body.deepCopy();
        kafka.put("TimeoutMs", 30000);
        short kafkaVersion = 0;
        ListPartitionReassignmentsRequestData request = (ListPartitionReassignmentsRequestData)
            Neutral.readRequest("ListPartitionReassignmentsRequestData", kafka, kafkaVersion);
        boolean everyTopic = request.topics() == null;
        return controller.listPartitionReassignments(context(ApiKeys.LIST_PARTITION_REASSIGNMENTS, kafkaVersion), request)
            .thenApply(r -> neutral.reply("ListPartitionReassignments", version, everyTopic ? topicsByName(r) : r, kafkaVersion));
    }

    /**
     * An answer to a request for every topic with its topics in the order of their names, each
     * topic's partitions kept in Kafka's order. Kafka walks its map of reassigning topics, keyed by
     * topic ids it draws at random, so its order of topics changes from one run to the next; the
     * order of a topic's partitions is Kafka's own and stays (spec/kafka.md, B29).
     */
    private static ListPartitionReassignmentsResponseData topicsByName(ListPartitionReassignmentsResponseData answer) {
        List<ListPartitionReassignmentsResponseData.OngoingTopicReassignment> topics = new ArrayList<>(answer.topics());
        topics.sort(Comparator.comparing(ListPartitionReassignmentsResponseData.OngoingTopicReassignment::name));
        return answer.setTopics(topics);  // the answer is this request's own
    }

    // ---- failover, replies, waiting ----

    /**
     * LOG-10: leadership moves to another node, which makes this controller renounce (it fails
     * what waits for commit with NOT_CONTROLLER and reverts to the committed state); the
     * uncommitted tail is then cut from the log, and leadership comes back to this node at a
     * newer epoch, as if a standby with the same committed state had taken over.
     */
    private void failover() throws Exception {
        raft.elect(MemoryRaft.OTHER);
        awaitIdle();
        raft.truncateUncommitted();
        raft.elect(MemoryRaft.SELF);
        awaitIdle();
        requireActive();
    }

    private ArrayNode releasedReplies() {
        ArrayNode replies = Neutral.JSON.arrayNode();
        Iterator<Pending> it = pending.iterator();
        while (it.hasNext()) {
            Pending p = it.next();
            if (p.reply().isDone()) {
                ObjectNode reply = replies.addObject();
                reply.put("seq", p.seq());
                reply.put("api", p.api());
                reply.put("version", p.version());
                reply.set("body", p.reply().join());
                it.remove();
            }
        }
        return replies;
    }

    /** Waits until every event queued so far, and whatever they queued, has run. */
    private void awaitQuiet() throws Exception {
        for (int round = 0; round < 10_000; round++) {
            long before = raft.logEndOffset();
            awaitIdle();
            if (raft.logEndOffset() == before) {
                awaitIdle();
                if (raft.logEndOffset() == before) {
                    return;
                }
            }
        }
        throw new IllegalStateException("Kafka's controller kept appending records without end");
    }

    /** A read event completes only after every event queued before it. */
    private void awaitIdle() throws Exception {
        try {
            controller.findAllTopicIds(context(ApiKeys.METADATA, 0)).get(30, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new IllegalStateException("Kafka's controller did not become idle within 30 s", e);
        }
    }

    private void requireActive() {
        if (controller.curClaimEpoch() < 0 || raft.resignRequested()) {
            throw new IllegalStateException("Kafka's controller did not become active"
                + (faults.isEmpty() ? "" : ": " + String.join("; ", faults)));
        }
    }

    // ---- the committed state ----

    private void observeCommitted(List<Batch<ApiMessageAndVersion>> batches) {
        if (batches.isEmpty()) {
            return;
        }
        MetadataDelta delta = new MetadataDelta.Builder().setImage(committedImage).build();
        Batch<ApiMessageAndVersion> last = batches.get(batches.size() - 1);
        for (Batch<ApiMessageAndVersion> batch : batches) {
            batch.records().forEach(amv -> delta.replay(amv.message()));
        }
        committedImage = delta.apply(new MetadataProvenance(last.lastOffset(), last.epoch(), last.appendTimestamp(), true));
    }

    /**
     * The committed state as Kafka's own image writer gives it: the minimal records of the
     * committed metadata, as a Kafka snapshot holds them, in the neutral form (each record with
     * every field of the version the writer gave it), in the order of LOG-11.
     */
    ArrayNode committed() {
        RecordListWriter writer = new RecordListWriter();
        committedImage.write(writer, new ImageWriterOptions.Builder(committedImage).build());
        List<ObjectNode> records = new ArrayList<>();
        for (ApiMessageAndVersion amv : writer.records()) {
            ObjectNode record = neutral.record(0, amv);
            record.remove("offset");
            record.remove("version");
            record.remove("frame");
            records.add(record);
        }
        ArrayNode out = Neutral.JSON.arrayNode();
        // Ordered by Kafka's own topic ids, which are unique, where two topics may carry one trace id.
        for (ObjectNode record : inSnapshotOrder(records)) {
            Neutral.mapTopicIds(record.get("data"), this::toTraceId);
            out.add(record);
        }
        return out;
    }

    /**
     * LOG-11's order, where Kafka's image writer follows its maps' (brokers, topics and partitions
     * are hash maps): the FeatureLevelRecords by feature name; the RegisterBrokerRecords by broker
     * id; for each topic by name, its TopicRecord and then its PartitionRecords by partition id;
     * then every other record, in Kafka's order. Records are moved, never changed or dropped.
     */
    static List<ObjectNode> inSnapshotOrder(List<ObjectNode> records) {
        List<ObjectNode> features = new ArrayList<>();
        List<ObjectNode> brokers = new ArrayList<>();
        List<ObjectNode> topics = new ArrayList<>();
        Map<String, List<ObjectNode>> partitionsByTopicId = new HashMap<>();
        List<ObjectNode> partitions = new ArrayList<>();
        List<ObjectNode> others = new ArrayList<>();
        for (ObjectNode record : records) {
            JsonNode data = record.get("data");
            switch (record.get("type").asText()) {
                case "FeatureLevelRecord" -> features.add(record);
                case "RegisterBrokerRecord" -> brokers.add(record);
                case "TopicRecord" -> topics.add(record);
                case "PartitionRecord" -> {
                    partitions.add(record);
                    partitionsByTopicId.computeIfAbsent(data.path("TopicId").asText(), k -> new ArrayList<>()).add(record);
                }
                default -> others.add(record);
            }
        }
        Comparator<ObjectNode> byName = (a, b) -> byCodePoints(a.get("data").path("Name").asText(),
            b.get("data").path("Name").asText());
        features.sort(byName);
        brokers.sort(Comparator.comparingLong(r -> r.get("data").path("BrokerId").asLong()));
        topics.sort(byName);
        List<ObjectNode> out = new ArrayList<>(records.size());
        out.addAll(features);
        out.addAll(brokers);
        Set<ObjectNode> placed = Collections.newSetFromMap(new IdentityHashMap<>());
        for (ObjectNode topic : topics) {
            out.add(topic);
            List<ObjectNode> mine = new ArrayList<>(
                partitionsByTopicId.getOrDefault(topic.get("data").path("TopicId").asText(), List.of()));
            mine.removeIf(placed::contains); // placed once, whatever the ids
            mine.sort(Comparator.comparingLong(r -> r.get("data").path("PartitionId").asLong()));
            out.addAll(mine);
            placed.addAll(mine);
        }
        // A partition whose topic has no TopicRecord (not something Kafka's image holds) stays, after.
        for (ObjectNode partition : partitions) {
            if (!placed.contains(partition)) {
                out.add(partition);
            }
        }
        out.addAll(others);
        return out;
    }

    /** Strings by code point, as kraftspec (Python) orders names. */
    private static int byCodePoints(String a, String b) {
        return Arrays.compare(a.codePoints().toArray(), b.codePoints().toArray());
    }

    // ---- translation helpers ----

    private JsonNode errorBody(String api, int version, JsonNode request, short code) {
        ObjectNode body = Neutral.JSON.objectNode();
        body.put("ThrottleTimeMs", 0);
        switch (api) {
            case "BrokerRegistration" -> body.put("ErrorCode", code).put("BrokerEpoch", -1L);
            case "BrokerHeartbeat" -> {
                body.put("ErrorCode", code).put("IsCaughtUp", false).put("IsFenced", true).put("ShouldShutDown", false);
                if (version >= 1) {
                    body.put("LowestAcknowledgedOffset", -1L);
                }
            }
            case "AlterIsr" -> body.put("ErrorCode", code).putArray("Topics");
            case "CreateTopics" -> {
                ArrayNode topics = body.putArray("Topics");
                for (JsonNode t : request.path("Topics")) {
                    topics.addObject().put("Name", t.path("Name").asText())
                        .put("TopicId", Uuid.ZERO_UUID.toString()).put("ErrorCode", code);
                }
            }
            case "DeleteTopics" -> {
                ArrayNode responses = body.putArray("Responses");
                for (JsonNode n : request.path("TopicNames")) {
                    responses.addObject().put("Name", n.asText()).put("TopicId", Uuid.ZERO_UUID.toString())
                        .put("ErrorCode", code);
                }
            }
            case "AlterPartitionReassignments" -> body.put("ErrorCode", code).putArray("Responses");
            case "ListPartitionReassignments" -> body.put("ErrorCode", code).putArray("Topics");
            default -> body.put("ErrorCode", code);
        }
        return body;
    }

    private static boolean supportedVersion(String api, int version) {
        return version == 0 || (api.equals("BrokerHeartbeat") && version == 1);
    }

    /**
     * A batch's records with each run of PartitionChangeRecords reordered topic by topic, in the
     * order of the topics' names, each topic's records kept in Kafka's order, and the offsets given
     * again from {@code baseOffset}. Kafka walks a broker's partitions topic by topic in the order of
     * its topic ids, which it draws at random, so that order changes from one run to the next; the
     * order within a topic is Kafka's own and stays (spec/kafka.md, B25).
     */
    private List<ObjectNode> topicsInNameOrder(List<ObjectNode> batch, long baseOffset) {
        List<ObjectNode> out = new ArrayList<>(batch.size());
        int i = 0;
        while (i < batch.size()) {
            if (!batch.get(i).get("type").asText().equals("PartitionChangeRecord")) {
                out.add(batch.get(i++));
                continue;
            }
            int end = i;
            while (end < batch.size() && batch.get(end).get("type").asText().equals("PartitionChangeRecord")) {
                end++;
            }
            List<ObjectNode> run = new ArrayList<>(batch.subList(i, end));
            run.sort(Comparator.comparing(r -> topicNames.getOrDefault(r.get("data").get("TopicId").asText(), "")));
            out.addAll(run);  // a stable sort: each topic's records stay in Kafka's order
            i = end;
        }
        long offset = baseOffset;
        for (ObjectNode record : out) {
            record.put("offset", offset++);
        }
        return out;
    }

    private void learnTopicId(ObjectNode record) {
        if (record.get("type").asText().equals("TopicRecord")) {
            JsonNode data = record.get("data");
            String traceId = createdNameToTraceId.get(data.get("Name").asText());
            if (traceId != null) {
                kafkaToTraceId.put(data.get("TopicId").asText(), traceId);
                traceToKafkaId.put(traceId, data.get("TopicId").asText());
            }
            topicNames.put(toTraceId(data.get("TopicId").asText()), data.get("Name").asText());
        }
    }

    /**
     * A record's frame with the trace's topic ids where Kafka's invented ones are, as in its data: a
     * uuid is its 16 bytes in the frame, so Kafka's bytes are replaced by the trace id's, where they
     * start on a byte.
     */
    private String traceIdsInFrame(String frameHex, List<String> kafkaIds) {
        String out = frameHex;
        for (String kafkaId : kafkaIds) {
            String traceId = toTraceId(kafkaId);
            if (!traceId.equals(kafkaId)) {
                try {
                    out = Neutral.replaceBytes(out, Neutral.uuidHex(Uuid.fromString(kafkaId)),
                        Neutral.uuidHex(Uuid.fromString(traceId)));
                } catch (IllegalArgumentException e) {
                    // not a uuid Kafka can read: the frame keeps Kafka's bytes, and the comparison shows them
                }
            }
        }
        return out;
    }

    private JsonNode traceIds(JsonNode node) {
        Neutral.mapTopicIds(node, this::toTraceId);
        return node;
    }

    private String toTraceId(String kafkaId) {
        return kafkaToTraceId.getOrDefault(kafkaId, kafkaId);
    }

    private String toKafkaId(String traceId) {
        return traceToKafkaId.getOrDefault(traceId, traceId);
    }

    private static ControllerRequestContext context(ApiKeys key, int version) {
        return new ControllerRequestContext(new RequestHeaderData().setRequestApiKey(key.id)
            .setRequestApiVersion((short) version), KafkaPrincipal.ANONYMOUS, OptionalLong.empty());
    }

    /** The finalized range {@code [min, max]} of the feature {@code name}, or null if none is finalized. */
    private static int[] featureRange(JsonNode features, String name) {
        if (features == null) {
            return null;
        }
        for (JsonNode f : features) {
            if (f.get(0).asText().equals(name)) {
                return new int[] {f.get(1).asInt(), f.get(2).asInt()};
            }
        }
        return null;
    }

    /**
     * The metadata.version a trace finalizes, {@code [L, L]}: Kafka's at feature level L. Kafka keeps
     * one level per feature, so a range is refused, and so is a level this Kafka release does not know.
     */
    private static MetadataVersion traceMetadataVersion(int[] levels) {
        if (levels[0] != levels[1]) {
            throw new IllegalArgumentException("the trace finalizes metadata.version as the range [" + levels[0]
                + ", " + levels[1] + "]; Kafka finalizes one level per feature, so the adapter needs min == max");
        }
        int level = levels[0];
        MetadataVersion[] known = MetadataVersion.VERSIONS;
        String knownLevels = "it knows levels " + known[0].featureLevel() + " (" + known[0].version() + ") to "
            + known[known.length - 1].featureLevel() + " (" + known[known.length - 1].version() + ")";
        if (level < Short.MIN_VALUE || level > Short.MAX_VALUE) {
            throw new IllegalArgumentException("the trace finalizes metadata.version at level " + level
                + ", which Apache Kafka " + Main.kafkaVersion() + " does not support: " + knownLevels);
        }
        try {
            return MetadataVersion.fromFeatureLevel((short) level);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the trace finalizes metadata.version at level " + level
                + ", which Apache Kafka " + Main.kafkaVersion() + " does not support: " + knownLevels, e);
        }
    }

    /** The metadata.version Kafka runs at in this session. */
    MetadataVersion metadataVersion() {
        return metadataVersion;
    }

    static Throwable unwrap(Throwable e) {
        while ((e instanceof CompletionException || e instanceof ExecutionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    /** For the benchmark (Bench): the controller and its Raft client, to drive them directly. */
    QuorumController controller() {
        return controller;
    }

    MemoryRaft raft() {
        return raft;
    }

    @Override
    public void close() throws Exception {
        controller.beginShutdown();
        controller.close();
    }
}
