import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Several Kafka Streams instances of one application in one JVM, under the streams rebalance
 * protocol (group.protocol=streams): a word count (a repartition topic and a state store, so
 * 2 subtopologies x the input's partitions tasks), one stream thread each, the clients'
 * and brokers' default timings.
 *
 * Args: bootstrap application.id input output state.root instances tasks. Starts the
 * instances and prints "settled start ms=..." once every instance is RUNNING, every task is
 * active on exactly one instance and every instance has a task. Then reads commands from
 * stdin: "join" starts one more instance, "leave" closes the oldest one, "quit" closes them
 * all; after each the time until that condition holds again: "settled CMD ms=... tasks=..."
 * or "timeout CMD" after 120 s.
 */
public class StreamsRebalance {
    static int made = 0;

    static KafkaStreams start(String[] args) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, new File(args[4], "i" + made++).getPath());
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase().split("\\W+")))
            .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));
        Topology topology = builder.build();
        KafkaStreams streams = new KafkaStreams(topology, p);
        streams.start();
        return streams;
    }

    /** The active tasks of each instance, or null while one is not RUNNING. */
    static String settled(List<KafkaStreams> all, int tasks) {
        Set<String> seen = new HashSet<>();
        List<Integer> counts = new ArrayList<>();
        for (KafkaStreams s : all) {
            if (s.state() != KafkaStreams.State.RUNNING) {
                return null;
            }
            int n = 0;
            for (ThreadMetadata t : s.metadataForLocalThreads()) {
                for (TaskMetadata task : t.activeTasks()) {
                    if (!seen.add(task.taskId().toString())) {
                        return null;
                    }
                    n++;
                }
            }
            if (n == 0) {
                return null;
            }
            counts.add(n);
        }
        return seen.size() == tasks ? counts.toString().replace(" ", "") : null;
    }

    static void await(String what, List<KafkaStreams> all, int tasks, long t0)
            throws InterruptedException {
        long deadline = t0 + 120_000_000_000L;
        while (System.nanoTime() < deadline) {
            String counts = settled(all, tasks);
            if (counts != null) {
                System.out.printf("settled %s ms=%.1f tasks=%s%n", what,
                    (System.nanoTime() - t0) / 1e6, counts);
                System.out.flush();
                return;
            }
            Thread.sleep(2);
        }
        System.out.println("timeout " + what + " tasks=" + settled(all, tasks));
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        int instances = Integer.parseInt(args[5]), tasks = Integer.parseInt(args[6]);
        List<KafkaStreams> all = new ArrayList<>();
        long t0 = System.nanoTime();
        for (int i = 0; i < instances; i++) {
            all.add(start(args));
        }
        await("start", all, tasks, t0);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String cmd;
        while ((cmd = in.readLine()) != null && !cmd.equals("quit")) {
            t0 = System.nanoTime();
            if (cmd.equals("join")) {
                all.add(start(args));
            } else if (cmd.equals("leave")) {
                // Closed on its own thread: the others' clock starts as the leave begins.
                KafkaStreams gone = all.remove(0);
                new Thread(() -> gone.close(Duration.ofSeconds(30))).start();
            }
            await(cmd, all, tasks, t0);
        }
        for (KafkaStreams s : all) {
            s.close(Duration.ofSeconds(30));
        }
        System.out.println("closed");
        System.out.flush();
    }
}
