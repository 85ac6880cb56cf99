import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * Kafka Streams word count: lines from INPUT are split into words, regrouped by word (a
 * repartition topic), counted in the store "counts" (RocksDB, with its changelog topic) and
 * the counts written to OUTPUT, exactly once.
 *
 * Args: bootstrap application.id input output state.dir expected, where expected is
 * "word:count,..." (the store's counts to wait for). Prints state=RUNNING once running,
 * count.WORD=N per expected word, then closed=true after a clean close (which commits).
 */
public class WordCountStreams {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3];
        Map<String, Long> expected = new HashMap<>();
        for (String pair : args[5].split(",")) {
            String[] kv = pair.split(":");
            expected.put(kv[0], Long.parseLong(kv[1]));
        }
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), "6000");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), "500");
        p.put(StreamsConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase().split("\\W+")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.setUncaughtExceptionHandler(e -> {
            e.printStackTrace();
            System.out.println("error=" + e);
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        long deadline = System.currentTimeMillis() + 90_000;
        while (streams.state() != KafkaStreams.State.RUNNING) {
            if (System.currentTimeMillis() > deadline || !streams.state().isRunningOrRebalancing()) {
                throw new IllegalStateException("streams not running: " + streams.state());
            }
            Thread.sleep(50);
        }
        System.out.println("state=RUNNING");
        Map<String, Long> seen = new HashMap<>();
        while (System.currentTimeMillis() < deadline) {
            try {
                ReadOnlyKeyValueStore<String, Long> store = streams.store(
                    StoreQueryParameters.fromNameAndType("counts", QueryableStoreTypes.keyValueStore()));
                for (String word : expected.keySet()) {
                    Long n = store.get(word);
                    seen.put(word, n == null ? 0L : n);
                }
                if (seen.equals(expected)) break;
            } catch (org.apache.kafka.streams.errors.InvalidStateStoreException e) {
                // rebalancing or restoring: ask again
            }
            Thread.sleep(50);
        }
        for (Map.Entry<String, Long> e : seen.entrySet()) {
            System.out.println("count." + e.getKey() + "=" + e.getValue());
        }
        System.out.flush();
        boolean closed = streams.close(Duration.ofSeconds(30));
        System.out.println("closed=" + closed);
        System.out.println("final.state=" + streams.state());
    }
}
