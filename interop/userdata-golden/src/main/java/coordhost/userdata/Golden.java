package coordhost.userdata;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.ConsumerProtocolAssignment;
import org.apache.kafka.common.message.ConsumerProtocolSubscription;
import org.apache.kafka.streams.internals.generated.SubscriptionInfoData;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.internals.assignment.AssignmentInfo;
import org.apache.kafka.streams.processor.internals.assignment.SubscriptionInfo;
import org.apache.kafka.streams.state.HostInfo;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;

/**
 * Golden vectors for coordhost's core/userdata, made by Kafka's own classes.
 *
 * <pre>
 *   generate CASES   for every case line of CASES (testdata/userdata/cases.txt), build the
 *                    object with the real constructor, encode it, decode the bytes again,
 *                    and print NAME TAB KIND TAB HEX TAB DESCRIPTION-OF-THE-DECODED-OBJECT
 *   decode FILE      for every line NAME TAB KIND TAB HEX of FILE, decode with the real
 *                    decoder and print NAME TAB DESCRIPTION (or NAME TAB ERROR ...)
 * </pre>
 *
 * Maps are built as LinkedHashMap/TreeMap in the order of the case line so that every
 * encoding is deterministic; descriptions sort every set and map by its printed form.
 */
public final class Golden {
    private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);

    public static void main(final String[] args) throws Exception {
        if (args.length != 2) {
            throw new IllegalArgumentException("usage: Golden generate CASES | decode FILE");
        }
        final List<String> lines = Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8);
        for (final String line : lines) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            if (args[0].equals("generate")) {
                generate(line);
            } else if (args[0].equals("decode")) {
                final String[] f = line.split("\t", -1);
                OUT.println(f[0] + "\t" + decodeOrError(f[1], HexFormat.of().parseHex(f[2])));
            } else {
                throw new IllegalArgumentException("unknown mode " + args[0]);
            }
        }
        OUT.flush();
    }

    private static String decodeOrError(final String kind, final byte[] bytes) {
        try {
            return describe(kind, bytes);
        } catch (final Exception e) {
            return "ERROR " + e.getClass().getSimpleName();
        }
    }

    // ---- case lines ---------------------------------------------------------------------

    private static void generate(final String line) throws Exception {
        final String[] tok = line.trim().split("\\s+");
        final String kind = tok[0];
        final String name = tok[1];
        final Map<String, String> kv = new LinkedHashMap<>();
        for (int i = 2; i < tok.length; i++) {
            final int eq = tok[i].indexOf('=');
            kv.put(tok[i].substring(0, eq), tok[i].substring(eq + 1));
        }
        final String[] range = kv.get("versions").split("-");
        for (int v = Integer.parseInt(range[0]); v <= Integer.parseInt(range[range.length - 1]); v++) {
            final byte[] bytes = encode(kind, v, kv);
            OUT.println(name + "/v" + v + "\t" + kind + "\t" + HexFormat.of().formatHex(bytes) + "\t"
                + describe(kind, bytes));
        }
    }

    private static byte[] encode(final String kind, final int v, final Map<String, String> kv) {
        switch (kind) {
            case "sub":
                return bytes(subscriptionInfo(v, kv).encode());
            case "asg":
                return bytes(assignmentInfo(v, kv).encode());
            case "cps":
                return bytes(ConsumerProtocol.serializeSubscription(new Subscription(
                    list(kv.get("topics")), userData(kv.get("userdata")), partitions(kv.get("owned")),
                    Integer.parseInt(kv.get("gen")), rack(kv.get("rack"))), (short) v));
            case "cpa":
                return bytes(ConsumerProtocol.serializeAssignment(
                    new Assignment(partitions(kv.get("partitions")), userData(kv.get("userdata"))), (short) v));
            default:
                throw new IllegalArgumentException("unknown kind " + kind);
        }
    }

    private static SubscriptionInfo subscriptionInfo(final int v, final Map<String, String> kv) {
        final int latest = v <= 2 ? -1 : Integer.parseInt(kv.get("latest"));
        final Map<TaskId, Long> sums = new TreeMap<>();
        for (final String e : list(kv.get("sums"))) {
            final String[] p = e.split("=");
            sums.put(TaskId.parse(unesc(p[0])), Long.parseLong(p[1]));
        }
        final Map<String, String> tags = new LinkedHashMap<>();
        for (final String e : list(kv.get("tags"))) {
            final String[] p = e.split("=", -1);
            tags.put(unesc(p[0]), unesc(p[1]));
        }
        final String endpoint = kv.get("endpoint").equals("-") ? null : unesc(kv.get("endpoint"));
        return new SubscriptionInfo(v, latest, new ProcessId(UUID.fromString(kv.get("pid"))), endpoint, sums,
            Byte.parseByte(kv.get("unique")), Integer.parseInt(kv.get("error")), tags);
    }

    private static AssignmentInfo assignmentInfo(final int v, final Map<String, String> kv) {
        final List<TaskId> active = new ArrayList<>();
        for (final String t : list(kv.get("active"))) {
            active.add(TaskId.parse(unesc(t)));
        }
        final Map<TaskId, Set<TopicPartition>> standby = new LinkedHashMap<>();
        for (final String e : semis(kv.get("standby"))) {
            final String[] p = e.split("=", -1);
            standby.put(TaskId.parse(unesc(p[0])), new LinkedHashSet<>(partitions(p[1].replace('+', ','))));
        }
        final AssignmentInfo info = new AssignmentInfo(v, Integer.parseInt(kv.get("common")), active, standby,
            hosts(kv.get("hosts")), hosts(kv.get("shosts")), Integer.parseInt(kv.get("err")));
        final String next = kv.get("next");
        if (next != null) {
            info.setNextRebalanceTime(next.equals("max") ? Long.MAX_VALUE : Long.parseLong(next));
        }
        return info;
    }

    private static Map<HostInfo, Set<TopicPartition>> hosts(final String s) {
        final Map<HostInfo, Set<TopicPartition>> m = new LinkedHashMap<>();
        for (final String e : semis(s)) {
            final String[] p = e.split("=", -1);
            final int slash = p[0].lastIndexOf('/');
            m.put(new HostInfo(unesc(p[0].substring(0, slash)), Integer.parseInt(p[0].substring(slash + 1))),
                new LinkedHashSet<>(partitions(p[1].replace('+', ','))));
        }
        return m;
    }

    private static List<TopicPartition> partitions(final String s) {
        final List<TopicPartition> out = new ArrayList<>();
        for (final String tp : list(s)) {
            final int at = tp.lastIndexOf('@');
            out.add(new TopicPartition(unesc(tp.substring(0, at)), Integer.parseInt(tp.substring(at + 1))));
        }
        return out;
    }

    private static List<String> list(final String s) {
        final List<String> out = new ArrayList<>();
        if (s == null || s.equals("-") || s.isEmpty()) {
            return out;
        }
        for (final String e : s.split(",", -1)) {
            out.add(e);
        }
        return out;
    }

    private static List<String> semis(final String s) {
        final List<String> out = new ArrayList<>();
        if (s == null || s.equals("-")) {
            return out;
        }
        for (final String e : s.split(";", -1)) {
            out.add(e);
        }
        return out;
    }

    private static ByteBuffer userData(final String s) {
        return s.equals("-") ? null : ByteBuffer.wrap(HexFormat.of().parseHex(s));
    }

    private static Optional<String> rack(final String s) {
        return s.equals("-") ? Optional.empty() : Optional.of(unesc(s));
    }

    // ---- descriptions of decoded objects ------------------------------------------------

    private static String describe(final String kind, final byte[] bytes) throws Exception {
        switch (kind) {
            case "sub":
                return describe(SubscriptionInfo.decode(ByteBuffer.wrap(bytes)));
            case "asg":
                return describe(AssignmentInfo.decode(ByteBuffer.wrap(bytes)));
            case "cps": {
                final ByteBuffer b = ByteBuffer.wrap(bytes);
                final short v = ConsumerProtocol.deserializeVersion(b);
                final ConsumerProtocolSubscription s = ConsumerProtocol.deserializeConsumerProtocolSubscription(b, v);
                final List<String> owned = new ArrayList<>();
                for (final ConsumerProtocolSubscription.TopicPartition tp : s.ownedPartitions()) {
                    owned.add(esc(tp.topic()) + "@" + tp.partitions());
                }
                final List<String> topics = new ArrayList<>();
                for (final String t : s.topics()) {
                    topics.add(esc(t));
                }
                return "v=" + v + " topics=" + topics + " userdata=" + hex(s.userData()) + " owned=" + owned
                    + " gen=" + s.generationId() + " rack=" + (s.rackId() == null ? "null" : esc(s.rackId()));
            }
            case "cpa": {
                final ByteBuffer b = ByteBuffer.wrap(bytes);
                final short v = ConsumerProtocol.deserializeVersion(b);
                final ConsumerProtocolAssignment a = ConsumerProtocol.deserializeConsumerProtocolAssignment(b, v);
                final List<String> parts = new ArrayList<>();
                for (final ConsumerProtocolAssignment.TopicPartition tp : a.assignedPartitions()) {
                    parts.add(esc(tp.topic()) + "@" + tp.partitions());
                }
                return "v=" + v + " partitions=" + parts + " userdata=" + hex(a.userData());
            }
            default:
                throw new IllegalArgumentException("unknown kind " + kind);
        }
    }

    private static String describe(final SubscriptionInfo s) throws Exception {
        final Field f = SubscriptionInfo.class.getDeclaredField("data");
        f.setAccessible(true);
        final byte unique = ((SubscriptionInfoData) f.get(s)).uniqueField();
        final Map<String, String> sums = new TreeMap<>();
        s.taskOffsetSums().forEach((t, sum) -> sums.put(esc(t.toString()), Long.toString(sum)));
        final Map<String, String> tags = new TreeMap<>();
        s.clientTags().forEach((k, val) -> tags.put(esc(k), esc(val)));
        return "v=" + s.version() + " latest=" + s.latestSupportedVersion() + " pid=" + s.processId().id()
            + " endpoint=" + (s.userEndPoint() == null ? "null" : esc(s.userEndPoint()))
            + " sums=" + sums + " prev=" + sortedTasks(s.prevTasks()) + " standby=" + sortedTasks(s.standbyTasks())
            + " unique=" + unique + " error=" + s.errorCode() + " tags=" + tags;
    }

    private static String describe(final AssignmentInfo a) {
        final List<String> active = new ArrayList<>();
        for (final TaskId t : a.activeTasks()) {
            active.add(esc(t.toString()));
        }
        final Map<String, String> standby = new TreeMap<>();
        a.standbyTasks().forEach((t, tps) -> standby.put(esc(t.toString()), sortedPartitions(tps)));
        return "v=" + a.version() + " common=" + a.commonlySupportedVersion() + " active=" + active
            + " standby=" + standby + " hosts=" + hostMap(a.partitionsByHost())
            + " shosts=" + hostMap(a.standbyPartitionByHost()) + " err=" + a.errCode()
            + " next=" + a.nextRebalanceMs();
    }

    private static String hostMap(final Map<HostInfo, Set<TopicPartition>> m) {
        final Map<String, String> out = new TreeMap<>();
        m.forEach((h, tps) -> out.put(esc(h.host()) + "/" + h.port(), sortedPartitions(tps)));
        return out.toString();
    }

    private static String sortedTasks(final Collection<TaskId> tasks) {
        final TreeMap<String, String> m = new TreeMap<>();
        tasks.forEach(t -> m.put(esc(t.toString()), ""));
        return m.keySet().toString();
    }

    private static String sortedPartitions(final Collection<TopicPartition> tps) {
        final TreeMap<String, String> m = new TreeMap<>();
        tps.forEach(tp -> m.put(esc(tp.topic()) + "@" + tp.partition(), ""));
        return m.keySet().toString();
    }

    private static String hex(final ByteBuffer b) {
        if (b == null) {
            return "null";
        }
        final byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return "[" + HexFormat.of().formatHex(out) + "]";
    }

    private static byte[] bytes(final ByteBuffer b) {
        final byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    /** Escapes '%', ',', '=', '[', ']', '{', '}', whitespace and control characters as %XX of their UTF-8 bytes. */
    static String esc(final String s) {
        if (s == null) {
            return "null";
        }
        final StringBuilder sb = new StringBuilder();
        for (final byte b : s.getBytes(StandardCharsets.UTF_8)) {
            final int c = b & 0xff;
            if (c <= 0x20 || c == 0x7f || "%,=[]{}".indexOf(c) >= 0) {
                sb.append(String.format("%%%02X", c));
            } else {
                sb.append((char) c);
            }
        }
        // the appended chars are raw UTF-8 bytes; reinterpret them
        return new String(sb.toString().getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8);
    }

    /** Undoes %XX escapes (UTF-8 bytes) in a case-file value. */
    static String unesc(final String s) {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final byte[] in = s.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < in.length; i++) {
            if (in[i] == '%' && i + 2 < in.length) {
                out.write(Integer.parseInt(new String(in, i + 1, 2, StandardCharsets.US_ASCII), 16));
                i += 2;
            } else {
                out.write(in[i]);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }
}
