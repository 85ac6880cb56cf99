import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.*;
import org.apache.kafka.coordinator.group.modern.*;
import org.apache.kafka.coordinator.group.assignor.SimpleAssignor;
/** Kafka's SimpleAssignor on fresh homogeneous share groups (1-6 members, 1-6 partitions of one
 *  topic): one line per group, "members partitions m0=[..] m1=[..] ...". */
public class SimpleAssignorOracle {
  public static void main(String[] a) throws Exception {
    Uuid t = new Uuid(0, 1);
    for (int M = 1; M <= 6; M++) for (int P = 1; P <= 6; P++) {
      Map<String, MemberSubscriptionAndAssignmentImpl> members = new TreeMap<>();
      for (int i = 0; i < M; i++) members.put("m" + i, new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), Set.of(t), Assignment.EMPTY));
      final int parts = P;
      SubscribedTopicDescriber d = new SubscribedTopicDescriber() {
        public int numPartitions(Uuid u) { return parts; }
        public Set<String> racksForPartition(Uuid u, int p) { return Set.of(); }
      };
      GroupAssignment ga = new SimpleAssignor().assign(new GroupSpecImpl(members, SubscriptionType.HOMOGENEOUS, Map.of()), d);
      StringBuilder sb = new StringBuilder(M + " " + P);
      for (String m : new TreeSet<>(ga.members().keySet())) sb.append(" " + m + "=" + new TreeSet<>(ga.members().get(m).partitions().getOrDefault(t, Set.of())));
      System.out.println(sb);
    }
  }
}
