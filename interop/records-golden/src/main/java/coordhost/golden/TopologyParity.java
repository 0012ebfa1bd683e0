package coordhost.golden;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.StreamsInvalidTopologyException;
import org.apache.kafka.common.message.CreateTopicsRequestData.CreatableTopic;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataDelta;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataImage;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTopologyValue;
import org.apache.kafka.coordinator.group.streams.StreamsTopology;
import org.apache.kafka.coordinator.group.streams.topics.ConfiguredInternalTopic;
import org.apache.kafka.coordinator.group.streams.topics.ConfiguredSubtopology;
import org.apache.kafka.coordinator.group.streams.topics.ConfiguredTopology;
import org.apache.kafka.coordinator.group.streams.topics.InternalTopicManager;
import org.slf4j.LoggerFactory;

/**
 * Runs Kafka 4.4's InternalTopicManager.configureTopics on topologies and topic
 * metadata written by coordhost's differential test
 * (core/topology_parity_test.go) and prints the outcome canonically.
 *
 * <p>Input line: id | topics "name:partitions,.." | subtopologies separated by
 * '#', each "id;sources;repartitionSources name:n;sinks;changelogs;copartition"
 * with lists comma-separated ('-' empty) and copartition groups separated by
 * '+', each "sourceIdx.sourceIdx/repIdx.repIdx".
 *
 * <p>Output: id|INVALID|message, or id|status code (-1 ready)|subtopologies
 * "sid:tasks:rep=name/n.:chg=name/n." joined by ' '|topics to create
 * "name/n" joined by ','.
 */
public final class TopologyParity {
    public static void main(String[] args) throws Exception {
        for (String line : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
            if (!line.isBlank()) System.out.println(run(line.split("\\|", -1)));
        }
    }

    private static List<String> list(String s) {
        List<String> out = new ArrayList<>();
        if (s.isEmpty() || s.equals("-")) return out;
        for (String x : s.split(",")) out.add(x);
        return out;
    }

    private static String run(String[] f) {
        Map<String, Integer> topics = new HashMap<>();
        for (String t : list(f[1])) {
            String[] kv = t.split(":");
            topics.put(kv[0], Integer.parseInt(kv[1]));
        }
        Map<String, StreamsGroupTopologyValue.Subtopology> subs = new TreeMap<>();
        for (String spec : f[2].split("#")) {
            String[] p = spec.split(";", -1);
            List<StreamsGroupTopologyValue.TopicInfo> rep = new ArrayList<>();
            for (String r : list(p[2])) {
                String[] kv = r.split(":");
                rep.add(new StreamsGroupTopologyValue.TopicInfo().setName(kv[0]).setPartitions(Integer.parseInt(kv[1]))
                    .setReplicationFactor((short) 0).setTopicConfigs(List.of()));
            }
            List<StreamsGroupTopologyValue.TopicInfo> chg = new ArrayList<>();
            for (String c : list(p[4])) {
                chg.add(new StreamsGroupTopologyValue.TopicInfo().setName(c).setPartitions(0)
                    .setReplicationFactor((short) 0).setTopicConfigs(List.of()));
            }
            List<StreamsGroupTopologyValue.CopartitionGroup> groups = new ArrayList<>();
            if (!p[5].equals("-") && !p[5].isEmpty()) {
                for (String g : p[5].split("\\+")) {
                    String[] sr = g.split("/", -1);
                    groups.add(new StreamsGroupTopologyValue.CopartitionGroup().setSourceTopics(shorts(sr[0]))
                        .setSourceTopicRegex(List.of()).setRepartitionSourceTopics(shorts(sr[1])));
                }
            }
            subs.put(p[0], new StreamsGroupTopologyValue.Subtopology().setSubtopologyId(p[0])
                .setSourceTopics(list(p[1])).setSourceTopicRegex(List.of()).setRepartitionSourceTopics(rep)
                .setRepartitionSinkTopics(list(p[3])).setStateChangelogTopics(chg).setCopartitionGroups(groups));
        }
        StreamsTopology topology = new StreamsTopology(0, subs);
        try {
            ConfiguredTopology ct = InternalTopicManager.configureTopics(LoggerFactory.getLogger("parity"), "g", "m", 0L,
                topology, new Image(topics), Time.SYSTEM);
            String status = ct.topicConfigurationException().map(e -> Byte.toString(e.status().code())).orElse("-1");
            List<String> out = new ArrayList<>();
            ct.subtopologies().ifPresent(m -> m.forEach((id, s) -> out.add(id + ":" + s.numberOfTasks()
                + ":rep=" + internal(s.repartitionSourceTopics()) + ":chg=" + internal(s.stateChangelogTopics()))));
            List<String> create = new ArrayList<>();
            new TreeMap<>(ct.internalTopicsToBeCreated()).forEach((n, t) -> create.add(n + "/" + t.numPartitions()));
            return f[0] + "|" + status + "|" + String.join(" ", out) + "|" + String.join(",", create);
        } catch (StreamsInvalidTopologyException e) {
            return f[0] + "|INVALID|" + e.getMessage();
        } catch (RuntimeException e) {
            return f[0] + "|ERROR|" + e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    private static String internal(Map<String, ConfiguredInternalTopic> m) {
        List<String> out = new ArrayList<>();
        new TreeMap<>(m).forEach((n, t) -> out.add(n + "/" + t.numberOfPartitions()));
        return String.join(".", out);
    }

    private static List<Short> shorts(String s) {
        List<Short> out = new ArrayList<>();
        if (s.isEmpty()) return out;
        for (String x : s.split("\\.")) out.add(Short.parseShort(x));
        return out;
    }

    /** A metadata image holding just topic names and partition counts. */
    private record Image(Map<String, Integer> topics) implements CoordinatorMetadataImage {
        public Set<Uuid> topicIds() { return Set.of(); }
        public Set<String> topicNames() { return topics.keySet(); }
        public Optional<TopicMetadata> topicMetadata(String name) {
            Integer n = topics.get(name);
            if (n == null) return Optional.empty();
            return Optional.of(new TopicMetadata() {
                public String name() { return name; }
                public Uuid id() { return new Uuid(name.hashCode(), 1); }
                public int partitionCount() { return n; }
                public List<String> partitionRacks(int p) { return List.of(); }
            });
        }
        public Optional<TopicMetadata> topicMetadata(Uuid id) { return Optional.empty(); }
        public CoordinatorMetadataDelta emptyDelta() { throw new UnsupportedOperationException(); }
        public long version() { return 1; }
        public boolean isEmpty() { return topics.isEmpty(); }
    }
}
