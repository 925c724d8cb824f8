package dev.kraftspec.kafka;

import java.util.function.Supplier;

import org.apache.kafka.common.utils.Time;

/**
 * The controller's clock, moved only by the trace's tick events (LOG-15). The session moves it
 * while the controller is idle; the controller's event queue reads it to decide which deferred
 * tasks (the fencing of stale brokers among them) are due.
 */
final class MockClock implements Time {
    private volatile long nanos;

    void advanceTo(long millis) {
        long target = millis * 1_000_000L;
        if (target > nanos) {
            nanos = target;
        }
    }

    @Override
    public long milliseconds() {
        return nanos / 1_000_000L;
    }

    @Override
    public long nanoseconds() {
        return nanos;
    }

    @Override
    public void sleep(long ms) {
        // Nothing in the controller should sleep; time moves only with the trace.
    }

    // Abstract in Time before Kafka 4.4, a default method since: declared without @Override so
    // that the adapter builds against both. The controller does not call it.
    public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) throws InterruptedException {
        synchronized (obj) {
            while (!condition.get()) {
                if (milliseconds() >= deadlineMs) {
                    throw new org.apache.kafka.common.errors.TimeoutException("condition not met by " + deadlineMs + " ms");
                }
                obj.wait(100);
            }
        }
    }
}
