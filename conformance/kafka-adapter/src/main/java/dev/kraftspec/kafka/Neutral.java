package dev.kraftspec.kafka;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.UnaryOperator;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;

import org.apache.kafka.common.Uuid;

import org.apache.kafka.common.metadata.MetadataJsonConverters;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

/**
 * Between kraftspec's neutral form (spec/traces.md: the schema's field names, UUIDs as 22
 * characters) and Kafka's generated message classes. Kafka's own JSON converters do the field
 * work; the neutral form differs from their JSON only in the case of the first letter of each
 * field name, and in the fields each side's schema has.
 */
final class Neutral {
    static final JsonNodeFactory JSON = JsonNodeFactory.instance;
    private static final ObjectMapper MAPPER = new ObjectMapper();
    /**
     * kraftspec's folders of record definitions, siblings of the rpcs folder, the first naming a
     * type winning: Kafka's own definitions of the types the kafka profile writes differently, then
     * seed 000's for the rest (spec/schemas/__init__.py, FORMATS).
     */
    private static final List<String> RECORD_FOLDERS = List.of("kafka-records", "records");

    /**
     * kraftspec's folders of message definitions, siblings of the rpcs folder, the first naming a
     * message winning (spec/schemas/__init__.py, RPC_FORMATS): seed 000's for the kip-631 profile;
     * Kafka's forms of BrokerRegistration, BrokerHeartbeat and UnregisterBroker, then seed 000's,
     * for the kafka profile (DEC-9).
     */
    private static final List<String> SEED_MESSAGES = List.of("rpcs");
    private static final List<String> KAFKA_MESSAGES = List.of("kafka-rpcs", "rpcs");

    private final Path schemas;
    private final List<String> messageFolders;
    private final Map<String, JsonNode> schemaCache = new HashMap<>();
    private final Map<String, Optional<JsonNode>> recordSchemaCache = new HashMap<>();

    /**
     * {@code schemas}: kraftspec's spec/schemas/rpcs folder, for the fields a reply may carry; the
     * record folders beside it give the fields a record has.
     */
    Neutral(Path schemas) {
        this(schemas, SEED_MESSAGES);
    }

    private Neutral(Path schemas, List<String> messageFolders) {
        this.schemas = schemas;
        this.messageFolders = messageFolders;
    }

    /** This translation with the kafka profile's messages (DEC-9): Kafka's own forms of three of them. */
    Neutral withKafkaMessages() {
        return new Neutral(schemas, KAFKA_MESSAGES);
    }

    /**
     * A reply the adapter writes itself (a refusal) in the neutral form of {@code api} at
     * {@code version}: the schema's fields, those {@code body} lacks at their defaults.
     */
    JsonNode shaped(String api, int version, JsonNode body) {
        ObjectNode out = JSON.objectNode();
        for (JsonNode field : schema(api + "Response").get("fields")) {
            String name = field.get("name").asText();
            if (inVersion(field.get("versions").asText(), version)) {
                out.set(name, body.has(name) ? body.get(name) : defaultValue(field));
            }
        }
        return out;
    }

    /** A Kafka request, read from a neutral body by Kafka's JSON converter for that message. */
    static ApiMessage readRequest(String kafkaMessage, JsonNode neutralBody, short kafkaVersion) {
        JsonNode kafkaJson = renameKeys(neutralBody, Neutral::lowerFirst);
        try {
            Class<?> converter = Class.forName("org.apache.kafka.common.message." + kafkaMessage + "JsonConverter");
            return (ApiMessage) converter.getMethod("read", JsonNode.class, short.class)
                .invoke(null, kafkaJson, kafkaVersion);
        } catch (ReflectiveOperationException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            throw new IllegalArgumentException("Kafka cannot read this " + kafkaMessage + ": " + cause.getMessage(), cause);
        }
    }

    /**
     * A Kafka reply in the neutral form of kraftspec's {@code api} at {@code version}: the fields
     * kraftspec's schema has at that version, taken from Kafka's reply where it has them. A field
     * Kafka's reply lacks stays absent, so the comparison shows it.
     */
    JsonNode reply(String api, int version, ApiMessage kafkaReply, short kafkaVersion) {
        JsonNode json = writeMessage(kafkaReply, kafkaVersion);
        return keepSchemaFields(renameKeys(json, Neutral::upperFirst), schema(api + "Response").get("fields"), version);
    }

    /**
     * A record in the neutral form: its type, version, data, and frame bytes. The data are Kafka's
     * fields, completed to every field kraftspec's schema of the type has at that version: Kafka's
     * JSON converter leaves out a tagged field at its default, the neutral form has them all
     * (spec/traces.md). The schema's fields come first, in its order; a field of Kafka's that
     * kraftspec's schema lacks follows them, unchanged, for the comparison to show. A type
     * kraftspec has no schema for is left as Kafka wrote it.
     */
    ObjectNode record(long offset, ApiMessageAndVersion amv) {
        String type = amv.message().getClass().getSimpleName();
        ObjectNode out = JSON.objectNode();
        out.put("offset", offset);
        out.put("type", type);
        out.put("version", amv.version());
        JsonNode data = renameKeys(MetadataJsonConverters.writeJson(amv.message(), amv.version()), Neutral::upperFirst);
        Optional<JsonNode> schema = recordSchema(type);
        out.set("data", schema.isPresent() ? withEveryField(data, schema.get().get("fields"), amv.version()) : data);
        out.put("frame", hex(frame(amv)));
        return out;
    }

    /**
     * {@code value} with every field of {@code fields} at {@code version}, in the schema's order,
     * a missing one at its default; then the fields the schema lacks, in {@code value}'s order.
     * Arrays of structs and structs are completed element by element, field by field.
     */
    static JsonNode withEveryField(JsonNode value, JsonNode fields, int version) {
        if (value instanceof ArrayNode array) {
            ArrayNode out = JSON.arrayNode();
            array.forEach(item -> out.add(withEveryField(item, fields, version)));
            return out;
        }
        if (!(value instanceof ObjectNode object) || fields == null) {
            return value;
        }
        ObjectNode out = JSON.objectNode();
        for (JsonNode field : fields) {
            String name = field.get("name").asText();
            if (!inVersion(field.get("versions").asText(), version)) {
                continue;
            }
            out.set(name, object.has(name)
                ? withEveryField(object.get(name), field.get("fields"), version)
                : defaultValue(field));
        }
        object.fields().forEachRemaining(f -> {
            if (!out.has(f.getKey())) {
                out.set(f.getKey(), f.getValue());
            }
        });
        return out;
    }

    /**
     * The value a field has when it is not given, as kraftspec's schemas define it
     * (spec/schemas/__init__.py, default_value): the schema's default, else the type's zero value.
     */
    static JsonNode defaultValue(JsonNode field) {
        String kind = field.get("type").asText();
        String raw = field.hasNonNull("default") ? field.get("default").asText() : null;
        if ("null".equals(raw)) {
            return NullNode.getInstance();
        }
        if (kind.startsWith("[]")) {
            return JSON.arrayNode();
        }
        return switch (kind) {
            case "bool" -> JSON.booleanNode("true".equals(raw));
            case "int8", "int16", "int32", "uint16" -> JSON.numberNode(raw == null ? 0 : Integer.parseInt(raw));
            case "int64" -> JSON.numberNode(raw == null ? 0L : Long.parseLong(raw));
            case "float64" -> JSON.numberNode(raw == null ? 0.0 : Double.parseDouble(raw));
            case "uuid" -> JSON.textNode(Uuid.ZERO_UUID.toString());
            case "bytes" -> JSON.textNode(""); // empty bytes, in base64
            default -> JSON.textNode(raw == null ? "" : raw);
        };
    }

    /** The record's bytes as Kafka's metadata serde frames them (frame version, type, version, payload). */
    static byte[] frame(ApiMessageAndVersion amv) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = MetadataRecordSerde.INSTANCE.recordSize(amv, cache);
        ByteBuffer buffer = ByteBuffer.allocate(size);
        MetadataRecordSerde.INSTANCE.write(amv, cache, new ByteBufferAccessor(buffer));
        return buffer.array();
    }

    static JsonNode writeMessage(ApiMessage message, short version) {
        try {
            Class<?> converter = Class.forName(message.getClass().getName() + "JsonConverter");
            return (JsonNode) converter.getMethod("write", message.getClass(), short.class)
                .invoke(null, message, version);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("no JSON converter for " + message.getClass().getName(), e);
        }
    }

    /** Every {@code TopicId} value in {@code node} passed through {@code map}, in place. */
    static void mapTopicIds(JsonNode node, UnaryOperator<String> map) {
        if (node instanceof ObjectNode object) {
            Iterator<Map.Entry<String, JsonNode>> fields = object.fields();
            while (fields.hasNext()) {
                Map.Entry<String, JsonNode> f = fields.next();
                if (f.getKey().equals("TopicId") && f.getValue().isTextual()) {
                    f.setValue(TextNode.valueOf(map.apply(f.getValue().asText())));
                } else {
                    mapTopicIds(f.getValue(), map);
                }
            }
        } else if (node instanceof ArrayNode array) {
            array.forEach(item -> mapTopicIds(item, map));
        }
    }

    private JsonNode schema(String name) {
        return schemaCache.computeIfAbsent(name, n -> {
            for (String folder : messageFolders) {
                Path file = schemas.resolveSibling(folder).resolve(n + ".json");
                if (Files.isRegularFile(file)) {
                    try {
                        return MAPPER.readTree(Files.readString(file));
                    } catch (IOException e) {
                        throw new IllegalStateException("cannot read kraftspec's schema " + file, e);
                    }
                }
            }
            throw new IllegalStateException("kraftspec has no schema of " + n + " in " + messageFolders);
        });
    }

    /** kraftspec's definition of the record type {@code name}: kafka-records/ first, then records/. */
    private Optional<JsonNode> recordSchema(String name) {
        return recordSchemaCache.computeIfAbsent(name, n -> {
            for (String folder : RECORD_FOLDERS) {
                Path file = schemas.resolveSibling(folder).resolve(n + ".json");
                if (Files.isRegularFile(file)) {
                    try {
                        return Optional.of(MAPPER.readTree(Files.readString(file)));
                    } catch (IOException e) {
                        throw new IllegalStateException("cannot read kraftspec's schema " + file, e);
                    }
                }
            }
            return Optional.empty();
        });
    }

    private static JsonNode keepSchemaFields(JsonNode value, JsonNode fields, int version) {
        if (value instanceof ArrayNode array) {
            ArrayNode out = JSON.arrayNode();
            array.forEach(item -> out.add(keepSchemaFields(item, fields, version)));
            return out;
        }
        if (!(value instanceof ObjectNode object) || fields == null) {
            return value;
        }
        ObjectNode out = JSON.objectNode();
        for (JsonNode field : fields) {
            String name = field.get("name").asText();
            if (inVersion(field.get("versions").asText(), version) && object.has(name)) {
                out.set(name, keepSchemaFields(object.get(name), field.get("fields"), version));
            }
        }
        return out;
    }

    /** A schema version range: {@code "1+"}, {@code "0-2"} or {@code "3"}. */
    static boolean inVersion(String range, int version) {
        if (range.endsWith("+")) {
            return version >= Integer.parseInt(range.substring(0, range.length() - 1));
        }
        int dash = range.indexOf('-');
        if (dash > 0) {
            return version >= Integer.parseInt(range.substring(0, dash))
                && version <= Integer.parseInt(range.substring(dash + 1));
        }
        return version == Integer.parseInt(range);
    }

    static JsonNode renameKeys(JsonNode node, UnaryOperator<String> rename) {
        if (node instanceof ObjectNode object) {
            ObjectNode out = JSON.objectNode();
            object.fields().forEachRemaining(f -> out.set(rename.apply(f.getKey()), renameKeys(f.getValue(), rename)));
            return out;
        }
        if (node instanceof ArrayNode array) {
            ArrayNode out = JSON.arrayNode();
            array.forEach(item -> out.add(renameKeys(item, rename)));
            return out;
        }
        return node;
    }

    static String lowerFirst(String s) {
        return s.isEmpty() ? s : Character.toLowerCase(s.charAt(0)) + s.substring(1);
    }

    static String upperFirst(String s) {
        return s.isEmpty() ? s : Character.toUpperCase(s.charAt(0)) + s.substring(1);
    }

    /** A uuid's 16 bytes as a frame holds them (the most significant long first, big-endian), in hex. */
    static String uuidHex(Uuid uuid) {
        return String.format("%016x%016x", uuid.getMostSignificantBits(), uuid.getLeastSignificantBits());
    }

    /** {@code hex} with every whole-byte occurrence of the bytes {@code from} replaced by {@code to}. */
    static String replaceBytes(String hex, String from, String to) {
        StringBuilder out = new StringBuilder(hex.length());
        int i = 0;
        while (i < hex.length()) {
            if (hex.startsWith(from, i)) {
                out.append(to);
                i += from.length();
            } else {
                out.append(hex, i, i + 2);
                i += 2;
            }
        }
        return out.toString();
    }

    static String hex(byte[] bytes) {
        StringBuilder sb = new StringBuilder(bytes.length * 2);
        for (byte b : bytes) {
            sb.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
        }
        return sb.toString();
    }
}
