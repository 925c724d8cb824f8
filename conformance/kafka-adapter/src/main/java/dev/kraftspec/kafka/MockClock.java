package dev.kraftspec.kafka;

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
}
