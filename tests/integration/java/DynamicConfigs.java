import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Dynamic broker configs through the Java Admin, one step per argument after BOOTSTRAP:
 *   set:BROKER:NAME:VALUE   delete:BROKER:NAME   describe:BROKER:NAME
 * (BROKER empty = the cluster-wide default). Prints "key=value" lines prefixed with the
 * step's index: "N.result" (ok, or the exception's class and message) and, for describe,
 * the entry's value, source, read-only flag and synonyms (name=value@source, ...).
 */
public class DynamicConfigs {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        try (Admin admin = Admin.create(p)) {
            for (int i = 1; i < args.length; i++) {
                String[] step = args[i].split(":", -1);
                ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, step[1]);
                String name = step[2];
                String at = i + ".";
                if (step[0].equals("describe")) {
                    Map<ConfigResource, Config> got = admin.describeConfigs(
                        Collections.singleton(broker),
                        new DescribeConfigsOptions().includeSynonyms(true)).all().get();
                    ConfigEntry e = got.get(broker).get(name);
                    if (e == null) {
                        System.out.println(at + "value=none");
                        continue;
                    }
                    System.out.println(at + "value=" + e.value());
                    System.out.println(at + "source=" + e.source());
                    System.out.println(at + "read.only=" + e.isReadOnly());
                    StringBuilder syn = new StringBuilder();
                    for (ConfigEntry.ConfigSynonym s : e.synonyms()) {
                        if (syn.length() > 0) syn.append(", ");
                        syn.append(s.name()).append('=').append(s.value()).append('@').append(s.source());
                    }
                    System.out.println(at + "synonyms=" + syn);
                    continue;
                }
                AlterConfigOp change = step[0].equals("set")
                    ? new AlterConfigOp(new ConfigEntry(name, step[3]), AlterConfigOp.OpType.SET)
                    : new AlterConfigOp(new ConfigEntry(name, ""), AlterConfigOp.OpType.DELETE);
                Map<ConfigResource, Collection<AlterConfigOp>> ops =
                    Collections.singletonMap(broker, List.of(change));
                try {
                    admin.incrementalAlterConfigs(ops).all().get();
                    System.out.println(at + "result=ok");
                } catch (ExecutionException e) {
                    System.out.println(at + "result=" + e.getCause().getClass().getSimpleName()
                        + ": " + e.getCause().getMessage());
                }
            }
        }
    }
}
