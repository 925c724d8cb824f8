package dev.kraftspec.kafka;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Locale;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.server.common.MetadataVersion;

/**
 * kraftspec's conformance protocol (spec/protocol.md, version 1) in front of Apache Kafka's
 * QuorumController. One line in, one line out, in order; a fresh controller for every trace.
 *
 * <p>Usage: {@code java -cp CLASSPATH dev.kraftspec.kafka.Main --schemas DIR [--metadata-version 3.7-IV1]},
 * where DIR is kraftspec's spec/schemas/rpcs folder (its sibling folders kafka-records and records
 * hold the record definitions). The metadata.version given is Kafka's for traces that finalize
 * metadata.format; a trace that finalizes metadata.version itself runs Kafka at that level.
 */
public final class Main {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private Main() {
    }

    public static void main(String[] args) throws Exception {
        Path schemas = null;
        String mv = "3.7-IV1";
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--schemas" -> schemas = Path.of(args[++i]);
                case "--metadata-version" -> mv = args[++i];
                default -> {
                    System.err.println("unknown argument: " + args[i]);
                    System.exit(2);
                }
            }
        }
        if (schemas == null) {
            System.err.println("--schemas DIR (kraftspec's spec/schemas/rpcs) is required");
            System.exit(2);
        }
        MetadataVersion metadataVersion = metadataVersion(mv);
        PrintStream protocolOut = System.out;
        System.setOut(System.err); // stdout carries the protocol and nothing else
        Writer out = new OutputStreamWriter(protocolOut, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Neutral neutral = new Neutral(schemas);
        Session session = null;
        String line;
        while ((line = in.readLine()) != null) {
            ObjectNode answer;
            JsonNode message = null;
            try {
                message = MAPPER.readTree(line);
                String type = message.path("type").asText();
                switch (type) {
                    case "start" -> {
                        if (session != null) {
                            session.close();
                            session = null;
                        }
                        if (message.path("protocol").asInt() != 1) {
                            throw new IllegalArgumentException("this adapter speaks protocol 1");
                        }
                        session = new Session(message.get("config"), metadataVersion, neutral);
                        String name = "Apache Kafka " + kafkaVersion() + " QuorumController (metadata.version "
                            + session.metadataVersion().version() + ")";
                        answer = MAPPER.createObjectNode().put("type", "started").put("protocol", 1).put("name", name);
                        answer.putArray("levels").add("responses").add("state").add("records");
                        // Both profiles: Kafka is the system under test; a kip-631 trace measures how
                        // far Kafka is from the KIP as written, a kafka trace how far from itself.
                        answer.putArray("profiles").add("kip-631").add("kafka");
                        // Seed 004's heartbeat version 1 field: Kafka's heartbeat response has none
                        // (the kafka profile's messages have none either, DEC-9).
                        if (!session.kafkaMessages()) {
                            answer.putObject("unsupported").putArray("fields")
                                .add("BrokerHeartbeatResponse.LowestAcknowledgedOffset");
                        }
                    }
                    case "event" -> {
                        if (session == null) {
                            throw new IllegalStateException("an event before start");
                        }
                        answer = MAPPER.createObjectNode().put("type", "result").put("n", message.get("n").asInt());
                        answer.setAll(session.handle(message.get("event")));
                        if (message.path("committed").asBoolean(false)) {
                            answer.set("committed", session.committed());
                        }
                    }
                    case "stop" -> {
                        answer = MAPPER.createObjectNode().put("type", "stopped");
                    }
                    default -> throw new IllegalArgumentException("unknown message type '" + type + "'");
                }
            } catch (Exception | AssertionError e) {
                Throwable cause = Session.unwrap(e);
                answer = MAPPER.createObjectNode().put("type", "error");
                if (message != null && message.has("n")) {
                    answer.put("n", message.get("n").asInt());
                }
                answer.put("message", cause.getClass().getSimpleName() + ": " + cause.getMessage());
                cause.printStackTrace(System.err);
                if (session != null && !"event".equals(message == null ? null : message.path("type").asText())) {
                    session = closeQuietly(session);
                }
            }
            out.write(MAPPER.writeValueAsString(answer));
            out.write('\n');
            out.flush();
            if ("stopped".equals(answer.path("type").asText())) {
                break;
            }
        }
        if (session != null) {
            closeQuietly(session);
        }
        System.exit(0);
    }

    /** The release of Kafka's jars on the class path, from the version file kafka-clients carries. */
    static String kafkaVersion() {
        try (var stream = Main.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            java.util.Properties p = new java.util.Properties();
            if (stream != null) {
                p.load(stream);
            }
            return p.getProperty("version", "(unknown version)");
        } catch (java.io.IOException e) {
            return "(unknown version)";
        }
    }

    /** "3.7-IV1" to Kafka's constant IBP_3_7_IV1. */
    static MetadataVersion metadataVersion(String text) {
        String constant = "IBP_" + text.toUpperCase(Locale.ROOT).replace('.', '_').replace('-', '_');
        try {
            return MetadataVersion.valueOf(constant);
        } catch (IllegalArgumentException e) {
            System.err.println("metadata.version " + text + " is not known to this Kafka release");
            System.exit(2);
            throw e;
        }
    }

    private static Session closeQuietly(Session session) {
        try {
            session.close();
        } catch (Exception e) {
            e.printStackTrace(System.err);
        }
        return null;
    }
}
