import java.io.File;
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.TreeSet;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Kafka Streams word count under the streams rebalance protocol (group.protocol=streams,
 * KIP-1071), exactly once: lines from INPUT split into words, regrouped by word (a
 * repartition topic), counted in the store "counts" and written to OUTPUT.
 *
 * Args: bootstrap application.id input output state.dir stop.file [group.instance.id]
 * (a static member when given). Prints state=RUNNING
 * once running, tasks=[...] each time its active tasks change, standby=[...] each time its
 * standby tasks change, then, once stop.file exists, closed=true after a clean close (which
 * commits).
 */
public class StreamsGroupWordCount {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3];
        File stop = new File(args[5]);
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        if (args.length > 6) {
            p.put("group.instance.id", args[6]);
        }

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
            System.out.flush();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        long deadline = System.currentTimeMillis() + 240_000;
        boolean running = false;
        String last = null;
        String lastStandby = null;
        while (!stop.exists()) {
            if (System.currentTimeMillis() > deadline) {
                System.out.println("error=timeout");
                break;
            }
            KafkaStreams.State st = streams.state();
            if (!st.isRunningOrRebalancing() && st != KafkaStreams.State.CREATED) {
                System.out.println("error=state " + st);
                break;
            }
            if (st == KafkaStreams.State.RUNNING && !running) {
                running = true;
                System.out.println("state=RUNNING");
            }
            TreeSet<String> tasks = new TreeSet<>();
            TreeSet<String> standby = new TreeSet<>();
            for (ThreadMetadata t : streams.metadataForLocalThreads()) {
                for (TaskMetadata task : t.activeTasks()) {
                    tasks.add(task.taskId().toString());
                }
                for (TaskMetadata task : t.standbyTasks()) {
                    standby.add(task.taskId().toString());
                }
            }
            String nowStandby = standby.toString();
            if (st == KafkaStreams.State.RUNNING && !nowStandby.equals(lastStandby)) {
                lastStandby = nowStandby;
                System.out.println("standby=" + nowStandby);
            }
            String now = tasks.toString();
            if (st == KafkaStreams.State.RUNNING && !now.equals(last)) {
                last = now;
                System.out.println("tasks=" + now);
            }
            System.out.flush();
            Thread.sleep(50);
        }
        boolean closed = streams.close(Duration.ofSeconds(30));
        System.out.println("closed=" + closed);
        System.out.println("final.state=" + streams.state());
        System.out.flush();
    }
}
