package dev.kraftspec.kafka;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;

import org.apache.kafka.raft.Batch;
import org.apache.kafka.raft.BatchReader;
import org.apache.kafka.raft.LeaderAndEpoch;
import org.apache.kafka.raft.RaftClient;
import org.apache.kafka.raft.RaftClient.Listener;
import org.apache.kafka.raft.errors.NotLeaderException;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.KRaftVersion;

/**
 * The metadata quorum, as the trace drives it: a log in memory that commits when a commit event
 * says so, and changes leader when a failover event says so. It writes no control records (a
 * leader change takes no offset), so Kafka's offsets are the trace's offsets.
 *
 * <p>The controller calls {@link #prepareAppend} and {@link #schedulePreparedAppend} on its own
 * thread; the session calls everything else on the main thread while the controller is idle.
 * Every method is synchronized, which is all the ordering this needs.
 */
final class MemoryRaft {
    static final int SELF = 0;
    static final int OTHER = 1;

    private final List<Batch<ApiMessageAndVersion>> log = new ArrayList<>();
    private final List<Batch<ApiMessageAndVersion>> prepared = new ArrayList<>();
    private final List<Batch<ApiMessageAndVersion>> appendedSinceDrain = new ArrayList<>();
    private final MockClock clock;
    private Listener<ApiMessageAndVersion> listener;
    private LeaderAndEpoch leader = LeaderAndEpoch.UNKNOWN;
    private long nextOffset = 0;
    private long committedEnd = 0;
    private int delivered = 0;
    private boolean resigned = false;
    private boolean autoCommit = false;

    MemoryRaft(MockClock clock) {
        this.clock = clock;
    }

    // ---- what the session drives ----

    /** Appends an already committed batch (the bootstrap), delivered with the next commit. */
    synchronized void appendCommitted(List<ApiMessageAndVersion> records) {
        log.add(batch(records, leader.epoch()));
        committedEnd = nextOffset;
    }

    /**
     * Delivers every batch that ends before {@code offset} (LOG-6: whole batches only), and
     * returns them.
     */
    synchronized List<Batch<ApiMessageAndVersion>> commit(long offset) {
        List<Batch<ApiMessageAndVersion>> batches = new ArrayList<>();
        while (delivered < log.size() && log.get(delivered).lastOffset() < offset) {
            Batch<ApiMessageAndVersion> b = log.get(delivered++);
            batches.add(b);
            committedEnd = Math.max(committedEnd, b.lastOffset() + 1);
        }
        if (!batches.isEmpty() && listener != null) {
            listener.handleCommit(new ListReader(batches));
        }
        return batches;
    }

    /** Tells the controller that leadership is now {@code leaderId}'s, at a new epoch. */
    synchronized void elect(int leaderId) {
        leader = new LeaderAndEpoch(OptionalInt.of(leaderId), leader.epoch() + 1);
        resigned = false;
        if (listener != null) {
            listener.handleLeaderChange(leader);
        }
    }

    /** Drops the uncommitted tail (LOG-10): the next record gets the committed offset again. */
    synchronized void truncateUncommitted() {
        log.removeIf(b -> b.baseOffset() >= committedEnd);
        prepared.clear();
        appendedSinceDrain.removeIf(b -> b.baseOffset() >= committedEnd);
        delivered = Math.min(delivered, log.size());
        nextOffset = committedEnd;
    }

    /** The batches appended since the last call, in offset order. */
    synchronized List<Batch<ApiMessageAndVersion>> drainAppended() {
        List<Batch<ApiMessageAndVersion>> out = new ArrayList<>(appendedSinceDrain);
        appendedSinceDrain.clear();
        return out;
    }

    /**
     * For the benchmark (Bench): from now on every batch commits as soon as it is appended, as in
     * a quorum of one, and the log forgets it (it stays in {@link #drainAppended} until drained).
     */
    synchronized void autoCommit() {
        autoCommit = true;
    }

    synchronized boolean resignRequested() {
        return resigned;
    }

    synchronized long committedEnd() {
        return committedEnd;
    }

    // ---- the RaftClient the controller sees ----

    /**
     * This log as Kafka's {@code RaftClient}. The interface changes between Kafka releases (a
     * method's return type, a class that moved package), so it is implemented by a proxy that
     * answers by method name: one adapter source builds against every 4.x release.
     */
    @SuppressWarnings("unchecked")
    RaftClient<ApiMessageAndVersion> asClient() {
        InvocationHandler handler = (proxy, method, args) -> switch (method.getName()) {
            case "register" -> {
                register((Listener<ApiMessageAndVersion>) args[0]);
                yield null;
            }
            case "unregister" -> {
                unregister((Listener<ApiMessageAndVersion>) args[0]);
                yield null;
            }
            case "highWatermark" -> highWatermark();
            case "leaderAndEpoch" -> leaderAndEpoch();
            case "nodeId" -> OptionalInt.of(SELF);
            case "voterNode", "createSnapshot", "latestSnapshotId" -> Optional.empty();
            case "prepareAppend" -> prepareAppend((Integer) args[0], (List<ApiMessageAndVersion>) args[1]);
            case "schedulePreparedAppend" -> {
                schedulePreparedAppend();
                yield null;
            }
            case "shutdown" -> CompletableFuture.completedFuture(null);
            case "resign" -> {
                resign();
                yield null;
            }
            case "logEndOffset" -> logEndOffset();
            case "kraftVersion" -> KRaftVersion.KRAFT_VERSION_0;
            case "close" -> null;
            case "hashCode" -> System.identityHashCode(proxy);
            case "equals" -> proxy == args[0];
            case "toString" -> "kraftspec's in-memory metadata log";
            default -> {
                if (method.isDefault()) {
                    yield InvocationHandler.invokeDefault(proxy, method, args);
                }
                throw new UnsupportedOperationException("the adapter's Raft client does not do " + method.getName());
            }
        };
        return (RaftClient<ApiMessageAndVersion>) Proxy.newProxyInstance(
            RaftClient.class.getClassLoader(), new Class<?>[] {RaftClient.class}, handler);
    }

    private synchronized void register(Listener<ApiMessageAndVersion> l) {
        this.listener = l;
    }

    private synchronized void unregister(Listener<ApiMessageAndVersion> l) {
        if (this.listener == l) {
            this.listener = null;
        }
    }

    private synchronized OptionalLong highWatermark() {
        return committedEnd == 0 ? OptionalLong.empty() : OptionalLong.of(committedEnd);
    }

    private synchronized LeaderAndEpoch leaderAndEpoch() {
        return leader;
    }

    private synchronized long prepareAppend(int epoch, List<ApiMessageAndVersion> records) {
        if (!leader.isLeader(SELF) || epoch != leader.epoch()) {
            throw new NotLeaderException("node " + SELF + " is not the leader at epoch " + epoch);
        }
        Batch<ApiMessageAndVersion> b = batch(records, epoch);
        prepared.add(b);
        return b.lastOffset();
    }

    private synchronized void schedulePreparedAppend() {
        log.addAll(prepared);
        appendedSinceDrain.addAll(prepared);
        prepared.clear();
        if (autoCommit) {
            commit(nextOffset);
            log.clear();
            delivered = 0;
        }
    }

    private synchronized void resign() {
        resigned = true;
    }

    synchronized long logEndOffset() {
        return nextOffset;
    }

    private Batch<ApiMessageAndVersion> batch(List<ApiMessageAndVersion> records, int epoch) {
        long base = nextOffset;
        nextOffset += records.size();
        return Batch.data(base, epoch, clock.milliseconds(), 0, List.copyOf(records));
    }

    /** Committed batches, handed to the controller once. */
    private static final class ListReader implements BatchReader<ApiMessageAndVersion> {
        private final List<Batch<ApiMessageAndVersion>> batches;
        private final Iterator<Batch<ApiMessageAndVersion>> it;

        ListReader(List<Batch<ApiMessageAndVersion>> batches) {
            this.batches = batches;
            this.it = batches.iterator();
        }

        @Override
        public long baseOffset() {
            return batches.get(0).baseOffset();
        }

        @Override
        public OptionalLong lastOffset() {
            return OptionalLong.of(batches.get(batches.size() - 1).lastOffset());
        }

        @Override
        public boolean hasNext() {
            return it.hasNext();
        }

        @Override
        public Batch<ApiMessageAndVersion> next() {
            if (!it.hasNext()) {
                throw new NoSuchElementException();
            }
            return it.next();
        }

        @Override
        public void close() {
        }
    }
}
