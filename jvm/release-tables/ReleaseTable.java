// Prints, as one JSON object, what a Kafka release's broker advertises in ApiVersions:
// every API of the broker listener with its oldest and newest stable version, and the
// finalized level a freshly formatted cluster of that release gets for each feature.
// Run with one release's kafka-clients and kafka-server-common jars on the classpath
// (scripts/kafka-release-tables.sh). Reflection keeps it working across 3.6 .. 4.x.
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

public class ReleaseTable {
    public static void main(String[] args) throws Exception {
        Class<?> apiKeys = Class.forName("org.apache.kafka.common.protocol.ApiKeys");
        Class<?> listenerType = Class.forName(
            "org.apache.kafka.common.message.ApiMessageType$ListenerType");
        Object broker = listenerType.getField("BROKER").get(null);
        Method forListener = apiKeys.getMethod("apisForListener", listenerType);
        Iterable<?> apis = (Iterable<?>) forListener.invoke(null, broker);
        List<String> rows = new ArrayList<>();
        for (Object api : apis) {
            short id = apiKeys.getField("id").getShort(api);
            short oldest = (Short) apiKeys.getMethod("oldestVersion").invoke(api);
            short latest;
            try {
                latest = (Short) apiKeys.getMethod("latestVersion", boolean.class).invoke(api, false);
            } catch (NoSuchMethodException e) {
                latest = (Short) apiKeys.getMethod("latestVersion").invoke(api);
            }
            if (latest < oldest) continue;  // only unstable versions: not advertised
            // Kafka 4.x brokers refuse Produce v0-v2 but still advertise them, for clients
            // that look for v0 (KAFKA-18659, ApiVersionsResponse).
            if (id == 0 && oldest == 3) oldest = 0;
            rows.add("[" + id + ", " + oldest + ", " + latest + "]");
        }
        List<String> features = new ArrayList<>();
        Class<?> mv = Class.forName("org.apache.kafka.server.common.MetadataVersion");
        Object latestMv;
        try {
            latestMv = mv.getField("LATEST_PRODUCTION").get(null);
        } catch (NoSuchFieldException e) {
            try {
                latestMv = mv.getMethod("latestProduction").invoke(null);
            } catch (NoSuchMethodException e2) {
                latestMv = mv.getMethod("latest").invoke(null);
            }
        }
        short mvLevel = (Short) mv.getMethod("featureLevel").invoke(latestMv);
        features.add("\"metadata.version\": " + mvLevel);
        Class<?> feature = null;
        for (String name : new String[] {"org.apache.kafka.server.common.Feature",
                                         "org.apache.kafka.server.common.Features"}) {
            try { feature = Class.forName(name); break; } catch (ClassNotFoundException e) { }
        }
        if (feature != null && feature.isEnum()) {
            for (Object f : feature.getEnumConstants()) {
                String name = (String) feature.getMethod("featureName").invoke(f);
                if (!name.equals("transaction.version") && !name.equals("group.version")
                        && !name.equals("share.version") && !name.equals("streams.version")
                        && !name.equals("eligible.leader.replicas.version")) continue;
                Object lp;
                try {
                    lp = feature.getMethod("defaultLevel", mv).invoke(f, latestMv);
                } catch (NoSuchMethodException e) {
                    lp = feature.getMethod("latestProduction").invoke(f);
                }
                features.add("\"" + name + "\": " + lp);
            }
        }
        System.out.println("{\"apis\": [" + String.join(", ", rows) + "], \"features\": {"
            + String.join(", ", features) + "}}");
    }
}
