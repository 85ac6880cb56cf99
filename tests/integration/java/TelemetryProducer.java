import java.io.InputStream;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A producer with Kafka's defaults (enable.metrics.push=true): BOOTSTRAP CLIENT_ID TOPIC
 * MAX_SECONDS. Sends a record every 50 ms until its standard input closes or MAX_SECONDS
 * pass, then closes (a last, terminating telemetry push) and prints "sent=N" and the
 * client instance id the broker gave it ("instance=...").
 */
public class TelemetryProducer {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, args[1]);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        long deadline = System.currentTimeMillis() + Long.parseLong(args[3]) * 1000;
        AtomicBoolean stop = new AtomicBoolean(false);
        Thread watcher = new Thread(() -> {
            try {
                InputStream in = System.in;
                while (in.read() >= 0) { }
            } catch (Exception e) {
                // closed either way
            }
            stop.set(true);
        });
        watcher.setDaemon(true);
        watcher.start();
        int sent = 0;
        String instance = "none";
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            System.out.println("started=1");
            System.out.flush();
            while (!stop.get() && System.currentTimeMillis() < deadline) {
                producer.send(new ProducerRecord<>(args[2], "k", "v" + sent)).get();
                sent++;
                Thread.sleep(50);
            }
            instance = producer.clientInstanceId(java.time.Duration.ofSeconds(5)).toString();
        }
        System.out.println("sent=" + sent);
        System.out.println("instance=" + instance);
    }
}
