// Prints, as one JSON object, every broker property Kafka defines (KafkaConfig's
// ConfigDef) with its ConfigDef type, sorted by name: broker/config/kafka_broker_configs.json
// (scripts/kafka-broker-configs.sh), which kafkalite reads for the types of the properties
// it accepts without acting on them. Run with the pinned Kafka's jars on the classpath.
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigDef;

public class BrokerConfigs {
    public static void main(String[] args) {
        ConfigDef def = kafka.server.KafkaConfig$.MODULE$.configDef();
        Map<String, String> types = new TreeMap<>();
        for (ConfigDef.ConfigKey key : def.configKeys().values()) {
            types.put(key.name, key.type.name());
        }
        StringBuilder out = new StringBuilder("{\n");
        int i = 0;
        for (Map.Entry<String, String> e : types.entrySet()) {
            out.append("  \"").append(e.getKey()).append("\": \"").append(e.getValue())
               .append('"').append(++i < types.size() ? ",\n" : "\n");
        }
        System.out.print(out.append("}\n"));
    }
}
