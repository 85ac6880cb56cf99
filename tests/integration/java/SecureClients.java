import java.io.FileReader;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Secured clients against kafkalite; prints "key=value" lines for the test to read.
 *   SecureClients run NAME=PROPS...   per NAME: produce 5 records to java-NAME and consume
 *                                     them in group java-NAME; prints NAME=ok or the error
 *   SecureClients acl PROPS PRINCIPAL create, list and delete a Read ACL on topic acl-java
 *   SecureClients produce PROPS TOPIC send 3 records with the producer's defaults (idempotent
 *                                     since Kafka 3.0); prints produced=3 or error=CLASS
 */
public class SecureClients {
    static Properties load(String path) throws Exception {
        Properties p = new Properties();
        try (FileReader r = new FileReader(path)) {
            p.load(r);
        }
        return p;
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("acl")) {
            acl(load(args[1]), args[2]);
            return;
        }
        if (args[0].equals("produce")) {
            produce(load(args[1]), args[2]);
            return;
        }
        // The modes run side by side: each waits mostly on the network, not the CPU.
        List<Thread> threads = new java.util.ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            Thread t = new Thread(() -> {
                String result;
                try {
                    roundTrip(load(kv[1]), "java-" + kv[0]);
                    result = "ok";
                } catch (Exception e) {
                    result = e.getClass().getSimpleName() + ": " + e.getMessage();
                }
                synchronized (System.out) {
                    System.out.println(kv[0] + "=" + result);
                }
            });
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join();
        }
    }

    static void roundTrip(Properties base, String name) throws Exception {
        Properties p = new Properties();
        p.putAll(base);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < 5; i++) {
                producer.send(new ProducerRecord<>(name, "k" + i, "v" + i)).get();
            }
        }
        Properties c = new Properties();
        c.putAll(base);
        c.put("group.id", name);
        c.put("auto.offset.reset", "earliest");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        int seen = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of(name));
            long deadline = System.currentTimeMillis() + 30000;
            while (seen < 5 && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                seen += records.count();
            }
            consumer.commitSync();
        }
        if (seen != 5) {
            throw new IllegalStateException("consumed " + seen + " of 5");
        }
    }

    static void produce(Properties base, String topic) {
        Properties p = new Properties();
        p.putAll(base);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("max.block.ms", "15000");
        p.put("delivery.timeout.ms", "15000");
        p.put("request.timeout.ms", "10000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < 3; i++) {
                producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get();
            }
            System.out.println("produced=3");
        } catch (Exception e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            System.out.println("error=" + cause.getClass().getSimpleName());
        }
    }

    static void acl(Properties p, String principal) throws Exception {
        try (Admin admin = Admin.create(p)) {
            ResourcePattern topic = new ResourcePattern(ResourceType.TOPIC, "acl-java",
                                                        PatternType.LITERAL);
            AclBinding binding = new AclBinding(topic, new AccessControlEntry(
                principal, "*", AclOperation.READ, AclPermissionType.ALLOW));
            admin.createAcls(List.of(binding)).all().get();
            AclBindingFilter filter = new AclBindingFilter(
                new ResourcePatternFilter(ResourceType.TOPIC, "acl-java", PatternType.ANY),
                AccessControlEntryFilter.ANY);
            Collection<AclBinding> found = admin.describeAcls(filter).values().get();
            System.out.println("described=" + found.size());
            System.out.println("principal=" + found.iterator().next().entry().principal());
            Collection<AclBinding> deleted = admin.deleteAcls(List.of(filter)).all().get();
            System.out.println("deleted=" + deleted.size());
            System.out.println("after=" + admin.describeAcls(filter).values().get().size());
        }
    }
}
