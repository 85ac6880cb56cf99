import java.util.Collections;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.common.TopicPartition;

/**
 * Admin checks against kafkalite; prints "key=value" lines for the test to read.
 * Usage: AdminChecks BOOTSTRAP delete-records TOPIC OFFSET...
 *   prints, per offset, "OFFSET=low watermark" or "OFFSET=ExceptionClassName".
 */
public class AdminChecks {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(p)) {
            switch (args[1]) {
                case "delete-records" -> deleteRecords(admin, args);
                default -> throw new IllegalArgumentException(args[1]);
            }
        }
    }

    static String cause(ExecutionException e) {
        return e.getCause().getClass().getSimpleName();
    }

    static void deleteRecords(Admin admin, String[] args) throws Exception {
        TopicPartition tp = new TopicPartition(args[2], 0);
        for (int i = 3; i < args.length; i++) {
            long offset = Long.parseLong(args[i]);
            Map<TopicPartition, RecordsToDelete> req =
                Collections.singletonMap(tp, RecordsToDelete.beforeOffset(offset));
            String result;
            try {
                result = Long.toString(
                    admin.deleteRecords(req).lowWatermarks().get(tp).get().lowWatermark());
            } catch (ExecutionException e) {
                result = cause(e);
            }
            System.out.println(offset + "=" + result);
        }
    }
}
