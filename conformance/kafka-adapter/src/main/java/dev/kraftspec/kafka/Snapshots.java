package dev.kraftspec.kafka;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;
import org.apache.kafka.image.TopicImage;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.raft.Batch;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.snapshot.RecordsSnapshotWriter;
import org.apache.kafka.snapshot.SnapshotReader;

/**
 * Kafka's metadata snapshots for {@code kraftspec bench kafka}: one written through Kafka's
 * snapshot writer, holding the cluster the benchmark's impl snapshot holds (registered, unfenced
 * brokers; topics of 1,000 partitions placed round-robin, partition p on brokers p, p+1 and p+2);
 * then loaded in a fresh JVM as Kafka loads metadata: its snapshot reader (CRCs checked), each
 * record replayed into a {@code MetadataDelta}, and the delta applied into a {@code MetadataImage}.
 *
 * <p>The classes whose package moved between the Kafka 4.x releases (the snapshot id, the buffer
 * supplier, the log context) are reached by reflection, as in {@link Compat}.
 */
final class Snapshots {
    static final int TOPIC_SIZE = 1000;
    private static final int MAX_BATCH_BYTES = 8 * 1024 * 1024;

    private Snapshots() {
    }

    /** Writes the snapshot into {@code directory}; returns the number of records in it. */
    static long write(Path directory, MetadataVersion metadataVersion, int brokers, int partitions) throws Exception {
        Files.createDirectories(directory);
        List<ApiMessageAndVersion> records = new ArrayList<>();
        long count = 0;
        records.add(new ApiMessageAndVersion(new FeatureLevelRecord().setName(MetadataVersion.FEATURE_NAME)
            .setFeatureLevel(metadataVersion.featureLevel()), (short) 0));
        for (int b = 0; b < brokers; b++) {
            RegisterBrokerRecord register = new RegisterBrokerRecord().setBrokerId(b)
                .setIncarnationId(new Uuid(0x6b72616674L, b + 1)).setBrokerEpoch(b + 1).setFenced(false);
            register.features().add(new RegisterBrokerRecord.BrokerFeature().setName(MetadataVersion.FEATURE_NAME)
                .setMinSupportedVersion(metadataVersion.featureLevel()).setMaxSupportedVersion(metadataVersion.featureLevel()));
            records.add(new ApiMessageAndVersion(register, (short) 2));
        }
        long recordsTotal = 1 + brokers + (long) Math.max(1, partitions / TOPIC_SIZE) + partitions;
        Object raw = openWithId(Class.forName("org.apache.kafka.snapshot.FileRawSnapshotWriter"), "create", directory, recordsTotal, 1);
        RecordsSnapshotWriter.Builder builder = new RecordsSnapshotWriter.Builder();
        boolean rawSet = false;
        boolean sizeSet = false;
        for (Method m : RecordsSnapshotWriter.Builder.class.getMethods()) {
            if (m.getName().equals("setRawSnapshotWriter")) {
                m.invoke(builder, raw);
                rawSet = true;
            } else if (m.getName().startsWith("setMaxBatchSize") && m.getParameterCount() == 1) { // "Bytes" since 4.1
                m.invoke(builder, MAX_BATCH_BYTES);
                sizeSet = true;
            }
        }
        if (!rawSet || !sizeSet) {
            throw new IllegalStateException("RecordsSnapshotWriter.Builder has no setRawSnapshotWriter or setMaxBatchSize");
        }
        try (RecordsSnapshotWriter<ApiMessageAndVersion> writer = builder.build(MetadataRecordSerde.INSTANCE)) {
            for (int t = 0; t < Math.max(1, partitions / TOPIC_SIZE); t++) {
                Uuid topicId = new Uuid(0x746f706963L, t + 1);
                records.add(new ApiMessageAndVersion(new TopicRecord().setName(String.format("topic-%05d", t)).setTopicId(topicId), (short) 0));
                for (int i = 0; i < Math.min(TOPIC_SIZE, partitions); i++) {
                    int p = t * TOPIC_SIZE + i;
                    List<Integer> replicas = List.of(p % brokers, (p + 1) % brokers, (p + 2) % brokers);
                    records.add(new ApiMessageAndVersion(new PartitionRecord().setPartitionId(i).setTopicId(topicId)
                        .setReplicas(replicas).setIsr(replicas).setLeader(replicas.get(0)).setLeaderEpoch(0)
                        .setPartitionEpoch(0), (short) 0));
                }
                count += records.size();
                writer.append(records);
                records = new ArrayList<>();
            }
            writer.freeze();
        }
        if (count != recordsTotal) {
            throw new IllegalStateException("wrote " + count + " records, expected " + recordsTotal);
        }
        return count;
    }

    /** The loaded image and what loading it cost. */
    record Loaded(MetadataImage image, long nanos, long partitions) {
    }

    /** Loads the one snapshot in {@code directory} into a metadata image. */
    static Loaded load(Path directory) throws Exception {
        Path file = null;
        try (DirectoryStream<Path> found = Files.newDirectoryStream(directory, "*.checkpoint")) {
            for (Path path : found) {
                file = path;
            }
        }
        if (file == null) {
            throw new IOException("no .checkpoint file in " + directory);
        }
        String[] parts = file.getFileName().toString().replace(".checkpoint", "").split("-");
        long start = System.nanoTime();
        Object raw = openWithId(Class.forName("org.apache.kafka.snapshot.FileRawSnapshotReader"), "open", directory,
            Long.parseLong(parts[0]), Integer.parseInt(parts[1]));
        SnapshotReader<ApiMessageAndVersion> reader = reader(raw);
        MetadataDelta delta = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
        try {
            while (reader.hasNext()) {
                Batch<ApiMessageAndVersion> batch = reader.next();
                for (ApiMessageAndVersion record : batch.records()) {
                    delta.replay(record.message());
                }
            }
            MetadataImage image = delta.apply(new MetadataProvenance(reader.lastContainedLogOffset(),
                reader.lastContainedLogEpoch(), reader.lastContainedLogTimestamp(), true));
            long nanos = System.nanoTime() - start;
            long partitions = 0;
            for (TopicImage topic : image.topics().topicsById().values()) {
                partitions += topic.partitions().size();
            }
            return new Loaded(image, nanos, partitions);
        } finally {
            reader.close();
            ((AutoCloseable) raw).close();
        }
    }

    /**
     * {@code RecordsSnapshotReader.of(raw, serde, buffer supplier, max batch size, check CRCs[, log
     * context])}: the log context came with Kafka 4.1.
     */
    @SuppressWarnings("unchecked")
    private static SnapshotReader<ApiMessageAndVersion> reader(Object raw) throws Exception {
        Class<?> readerClass = Class.forName("org.apache.kafka.snapshot.RecordsSnapshotReader");
        for (Method m : readerClass.getMethods()) {
            int count = m.getParameterCount();
            if (!m.getName().equals("of") || (count != 5 && count != 6)) {
                continue;
            }
            Class<?>[] types = m.getParameterTypes();
            Object bufferSupplier = invokeStatic(types[2], "create");
            Object[] args = count == 5
                ? new Object[] {raw, MetadataRecordSerde.INSTANCE, bufferSupplier, MAX_BATCH_BYTES, true}
                : new Object[] {raw, MetadataRecordSerde.INSTANCE, bufferSupplier, MAX_BATCH_BYTES, true,
                    types[5].getConstructor().newInstance()};
            return (SnapshotReader<ApiMessageAndVersion>) m.invoke(null, args);
        }
        throw new IllegalStateException("RecordsSnapshotReader has no of(...) of five or six parameters");
    }

    /**
     * {@code type.name(directory, snapshot id)}, the id an {@code OffsetAndEpoch} of the class the
     * method takes (it moved from raft to server-common between releases).
     */
    private static Object openWithId(Class<?> type, String name, Path directory, long offset, int epoch) throws Exception {
        for (Method m : type.getMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == 2 && m.getParameterTypes()[0] == Path.class) {
                Constructor<?> c = m.getParameterTypes()[1].getConstructor(long.class, int.class);
                return invokeStatic(type, name, directory, c.newInstance(offset, epoch));
            }
        }
        throw new IllegalStateException(type.getName() + " has no static " + name + "(Path, OffsetAndEpoch)");
    }

    private static Object invokeStatic(Class<?> type, String name, Object... args) throws Exception {
        for (Method m : type.getMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == args.length) {
                try {
                    return m.invoke(null, args);
                } catch (InvocationTargetException e) {
                    Throwable cause = e.getCause();
                    throw cause instanceof Exception x ? x : new IllegalStateException(cause);
                }
            }
        }
        throw new IllegalStateException(type.getName() + " has no static " + name + " of " + args.length + " parameters");
    }
}
