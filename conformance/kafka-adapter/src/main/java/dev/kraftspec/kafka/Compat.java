package dev.kraftspec.kafka;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.controller.ControllerRequestContext;
import org.apache.kafka.controller.QuorumController;
import org.apache.kafka.controller.metrics.QuorumControllerMetrics;

/**
 * The few calls whose signatures differ between the Kafka 4.x releases the adapter supports,
 * made by reflection so that one source builds against all of them.
 */
final class Compat {
    private Compat() {
    }

    /** {@code createTopics(context, request, describable[, forwarded])}: 4.3 added {@code forwarded}. */
    @SuppressWarnings("unchecked")
    static CompletableFuture<CreateTopicsResponseData> createTopics(QuorumController controller,
            ControllerRequestContext context, CreateTopicsRequestData request, Set<String> describable) {
        for (Method m : QuorumController.class.getMethods()) {
            if (m.getName().equals("createTopics")) {
                Object[] args = m.getParameterCount() == 4
                    ? new Object[] {context, request, describable, false}
                    : new Object[] {context, request, describable};
                return (CompletableFuture<CreateTopicsResponseData>) invoke(m, controller, args);
            }
        }
        throw new IllegalStateException("QuorumController has no createTopics");
    }

    /** The controller's metrics, without a yammer registry: 4.0 takes (registry, time), later (registry, time, ...). */
    static QuorumControllerMetrics metrics(Time time) {
        for (Constructor<?> c : QuorumControllerMetrics.class.getConstructors()) {
            Class<?>[] types = c.getParameterTypes();
            if (types.length >= 2 && types[0] == Optional.class && types[1] == Time.class) {
                Object[] args = new Object[types.length];
                args[0] = Optional.empty();
                args[1] = time;
                for (int i = 2; i < types.length; i++) {
                    args[i] = types[i] == int.class ? 0 : types[i] == long.class ? 0L : types[i] == boolean.class ? false : null;
                }
                try {
                    return (QuorumControllerMetrics) c.newInstance(args);
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException("cannot make QuorumControllerMetrics", e);
                }
            }
        }
        throw new IllegalStateException("no QuorumControllerMetrics constructor taking (Optional, Time, ...)");
    }

    private static Object invoke(Method m, Object target, Object[] args) {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(cause);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }
}
