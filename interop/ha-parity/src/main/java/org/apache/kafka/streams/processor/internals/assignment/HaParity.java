package org.apache.kafka.streams.processor.internals.assignment;

import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.ProcessId;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.StringJoiner;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;

/**
 * Runs Kafka Streams' HighAvailabilityTaskAssignor on the cases of an input
 * file (see README.md for the format) and prints per process the actives,
 * standbys and warm-ups it decides.
 *
 * Usage: HaParity [-plain] INPUT [CASE_NAME...] (no names: every case;
 * -plain: plain ClientState objects, warm-ups printed among the standbys).
 */
public final class HaParity {

    /** One recorded mutation or lag lookup, with the TaskMovement method that made it. */
    private record Event(String what, Recording client, TaskId task, String caller, String outer) { }

    private static final List<Event> EVENTS = new ArrayList<>();

    /**
     * A ClientState that records the calls the assignor makes, so that
     * warm-ups (standbys placed by TaskMovement) can be told from standbys.
     */
    static final class Recording extends ClientState {
        final ProcessId id;

        Recording(final ProcessId id, final int capacity, final Map<String, String> tags) {
            super(id, capacity, tags);
            this.id = id;
        }

        @Override
        public void assignStandby(final TaskId task) {
            record("assignStandby", task);
            super.assignStandby(task);
        }

        @Override
        void unassignStandby(final TaskId task) {
            record("unassignStandby", task);
            super.unassignStandby(task);
        }

        @Override
        public long lagFor(final TaskId task) {
            record("lagFor", task);
            return super.lagFor(task);
        }

        private void record(final String what, final TaskId task) {
            final List<String> movement = StackWalker.getInstance().walk(frames -> frames
                .filter(f -> f.getClassName().equals(TaskMovement.class.getName()))
                .map(StackWalker.StackFrame::getMethodName)
                .limit(2)
                .toList());
            if (!movement.isEmpty()) {
                EVENTS.add(new Event(what, this, task, movement.get(0), movement.size() > 1 ? movement.get(1) : ""));
            }
        }
    }

    private HaParity() { }

    public static void main(final String[] args) throws IOException {
        final boolean plain = args.length > 0 && args[0].equals("-plain");
        final List<String> rest = List.of(args).subList(plain ? 1 : 0, args.length);
        final Set<String> only = new HashSet<>(rest.subList(1, rest.size()));
        for (final Case c : Case.read(Path.of(rest.get(0)))) {
            if (only.isEmpty() || only.contains(c.name)) {
                if (plain) {
                    runPlain(c);
                } else {
                    runCase(c);
                }
            }
        }
    }

    private static void runCase(final Case c) {
        final List<Recording> procs = new ArrayList<>(); // in input order
        final Map<ProcessId, ClientState> clients = c.clients((id, capacity, tags) -> {
            final Recording r = new Recording(id, capacity, tags);
            procs.add(r);
            return r;
        });
        EVENTS.clear();
        final boolean probing = c.assign(clients);
        final Map<Recording, Set<TaskId>> warmups = new HashMap<>();
        final Set<TaskId> ambiguous = classifyWarmups(warmups, c.acceptable, procs);
        System.out.println("case " + c.name + " probing " + probing);
        for (final Recording r : procs) {
            final Set<TaskId> warm = warmups.getOrDefault(r, Set.of());
            final Set<TaskId> standby = new TreeSet<>();
            final Set<TaskId> warmup = new TreeSet<>();
            boolean exact = true;
            for (final TaskId t : r.standbyTasks()) {
                (warm.contains(t) ? warmup : standby).add(t);
                exact &= !ambiguous.contains(t);
            }
            printProcess(r.id, exact, r.activeTasks(), standby, warmup);
        }
        System.out.println("end");
    }

    /**
     * Runs a case on plain ClientState objects, as HaBench times it: no
     * recording, so standbys and warm-ups are not told apart (each process
     * prints exact 0, its warm-ups among its standbys). Used on the
     * benchmark shapes, where recording takes many times longer.
     */
    private static void runPlain(final Case c) {
        final Map<ProcessId, ClientState> clients = c.clients(ClientState::new);
        System.out.println("case " + c.name + " probing " + c.assign(clients));
        for (final Map.Entry<ProcessId, ClientState> e : clients.entrySet()) {
            printProcess(e.getKey(), false, e.getValue().activeTasks(), e.getValue().standbyTasks(), Set.of());
        }
        System.out.println("end");
    }

    private static void printProcess(final ProcessId id, final boolean exact, final Set<TaskId> active,
                                     final Set<TaskId> standby, final Set<TaskId> warmup) {
        System.out.println("process " + id.id() + " exact " + (exact ? 1 : 0) + " active " + list(active)
            + " standby " + list(standby) + " warmup " + list(warmup));
    }

    /** Makes the ClientState of one process (a plain one, or a Recording). */
    interface ClientMaker {
        ClientState make(ProcessId id, int capacity, Map<String, String> tags);
    }

    /** One process line of a case, with the offset sums its offset lines give. */
    private record Process(ProcessId id, int capacity, Map<String, String> tags, Map<TaskId, Long> offsets) { }

    /**
     * One case of an input file, parsed once: the tasks, end offset sums,
     * processes and configs the assignor is called with. HaParity runs it
     * with recording clients; HaBench times clients() and assign() on plain
     * ones.
     */
    static final class Case {
        final String name;
        final long acceptable;
        final AssignmentConfigs configs;
        private final Set<TaskId> all = new TreeSet<>();
        private final Set<TaskId> stateful = new TreeSet<>();
        private final Map<TaskId, Long> endSums = new TreeMap<>();
        private final List<Process> procs = new ArrayList<>();

        /** Parses one block, from its "case NAME" line to its "end" line. */
        private Case(final List<String> block) {
            name = block.get(0).split(" ")[1];
            long acceptable = 0;
            int maxWarmups = 1;
            int standbys = 0;
            List<String> tagKeys = List.of();
            for (final String line : block.subList(1, block.size() - 1)) {
                final String[] f = line.split(" ");
                switch (f[0]) {
                    case "config" -> {
                        acceptable = Long.parseLong(f[1]);
                        maxWarmups = Integer.parseInt(f[2]);
                        standbys = Integer.parseInt(f[3]);
                        tagKeys = f[4].equals("-") ? List.of() : List.of(f[4].split(","));
                    }
                    case "task" -> {
                        final TaskId t = new TaskId(Integer.parseInt(f[1]), Integer.parseInt(f[2]));
                        all.add(t);
                        if (f[3].equals("1")) {
                            stateful.add(t);
                            endSums.put(t, Long.parseLong(f[4]));
                        }
                    }
                    case "process" -> {
                        final Map<String, String> tags = new TreeMap<>();
                        if (!f[3].equals("-")) {
                            for (final String kv : f[3].split(";")) {
                                final String[] p = kv.split("=", 2);
                                tags.put(p[0], p[1]);
                            }
                        }
                        procs.add(new Process(new ProcessId(UUID.fromString(f[1])), Integer.parseInt(f[2]), tags,
                            new TreeMap<>()));
                    }
                    case "offset" -> procs.get(Integer.parseInt(f[1])).offsets()
                        .put(new TaskId(Integer.parseInt(f[2]), Integer.parseInt(f[3])), Long.parseLong(f[4]));
                    default -> throw new IllegalArgumentException("case " + name + ": bad line " + line);
                }
            }
            this.acceptable = acceptable;
            configs = new AssignmentConfigs(acceptable, maxWarmups, standbys, 600_000L, tagKeys,
                OptionalInt.empty(), OptionalInt.empty(), "none");
        }

        /** The cases of an input file, in file order. */
        static List<Case> read(final Path file) throws IOException {
            final List<Case> cases = new ArrayList<>();
            List<String> block = new ArrayList<>();
            for (String line : Files.readAllLines(file)) {
                line = line.strip();
                if (line.isEmpty() || line.startsWith("#")) {
                    continue;
                }
                block.add(line);
                if (line.equals("end")) {
                    cases.add(new Case(block));
                    block = new ArrayList<>();
                }
            }
            return cases;
        }

        /**
         * The clients of one rebalance, built as StreamsPartitionAssignor
         * builds them: each process's previous tasks and offset sums (one
         * consumer per process), then its lags from the end offset sums.
         */
        Map<ProcessId, ClientState> clients(final ClientMaker maker) {
            final Map<ProcessId, ClientState> clients = new TreeMap<>();
            for (int i = 0; i < procs.size(); i++) {
                final Process p = procs.get(i);
                final ClientState c = maker.make(p.id(), p.capacity(), p.tags());
                c.addPreviousTasksAndOffsetSums("consumer-" + i, p.offsets());
                c.computeTaskLags(p.id(), endSums);
                clients.put(p.id(), c);
            }
            return clients;
        }

        /** One HighAvailabilityTaskAssignor run on clients; its result: whether a probing rebalance is needed. */
        boolean assign(final Map<ProcessId, ClientState> clients) {
            final RackAwareTaskAssignor rackAware = new RackAwareTaskAssignor(null, Collections.emptyMap(),
                Collections.emptyMap(), Collections.emptyMap(), null, null, configs, Time.SYSTEM);
            return new HighAvailabilityTaskAssignor().assign(clients, all, stateful, rackAware, configs);
        }
    }

    /**
     * Fills warmups from the recorded events; returns the tasks whose
     * standby-phase warm-ups could not be reconstructed (none expected).
     *
     * Active phase: a standby placed by moveActiveAndTryToWarmUp is a warm-up.
     * Standby phase: Kafka queues a movement for each standby whose lag
     * assignStandbyTaskMovements looked up (after the most caught-up
     * client's) when that lag is larger. This replays the queue (same
     * PriorityQueue, same insertion order) to learn the order movements ran
     * in, and for each one whether a source existed (a caught-up client, or a
     * client before the destination in lag order, not holding the task).
     * A movement that ran made one assignStandby on its source, followed by
     * unassignStandby on the destination when the warm-up budget was spent;
     * otherwise the destination kept its standby as a warm-up.
     */
    private static Set<TaskId> classifyWarmups(final Map<Recording, Set<TaskId>> warmups, final long acceptable,
                                               final List<Recording> clients) {
        final List<Event> moves = new ArrayList<>(); // standby-phase assign/unassign, in order
        final List<Recording[]> queued = new ArrayList<>(); // {dest} with task, in insertion order
        final List<TaskId> queuedTasks = new ArrayList<>();
        Event pending = null;
        for (final Event e : EVENTS) {
            if (e.what().equals("assignStandby") && e.caller().equals("moveActiveAndTryToWarmUp")) {
                warmups.computeIfAbsent(e.client(), k -> new TreeSet<>()).add(e.task());
            } else if (e.caller().equals("moveStandbyAndTryToWarmUp")) {
                moves.add(e);
            } else if (e.what().equals("lagFor") && e.outer().equals("assignStandbyTaskMovements")) {
                if (pending == null) {
                    pending = e;
                    continue;
                }
                if (pending.client().lagFor(pending.task()) < e.client().lagFor(e.task())) {
                    queued.add(new Recording[] {e.client()});
                    queuedTasks.add(e.task());
                }
                pending = null;
            }
        }
        final Map<TaskId, Integer> caughtUp = new HashMap<>();
        for (final TaskId t : queuedTasks) {
            int n = 0;
            for (final Recording c : clients) {
                n += caughtUp(c, t, acceptable) ? 1 : 0;
            }
            caughtUp.put(t, n);
        }
        final PriorityQueue<Integer> order = new PriorityQueue<>(
            Comparator.<Integer, Integer>comparing(i -> caughtUp.get(queuedTasks.get(i))).thenComparing(queuedTasks::get));
        for (int i = 0; i < queued.size(); i++) {
            order.add(i);
        }
        final Map<TaskId, Set<Recording>> holders = startHolders(clients, moves);
        final Set<TaskId> ambiguous = new HashSet<>();
        int next = 0;
        while (!order.isEmpty()) {
            final int i = order.poll();
            final TaskId t = queuedTasks.get(i);
            final Recording dest = queued.get(i)[0];
            final Set<Recording> held = holders.get(t);
            if (!sourceExists(clients, held, t, dest, acceptable)) {
                continue;
            }
            if (next >= moves.size() || !moves.get(next).what().equals("assignStandby") || !moves.get(next).task().equals(t)) {
                ambiguous.add(t);
                continue;
            }
            held.add(moves.get(next++).client());
            if (next < moves.size() && moves.get(next).what().equals("unassignStandby") && moves.get(next).client() == dest) {
                held.remove(dest);
                next++;
            } else {
                warmups.computeIfAbsent(dest, k -> new TreeSet<>()).add(t);
            }
        }
        if (next != moves.size()) {
            throw new IllegalStateException("standby movements not all replayed: " + next + " of " + moves.size());
        }
        return ambiguous;
    }

    private static boolean caughtUp(final Recording c, final TaskId t, final long acceptable) {
        final long lag = c.lagFor(t);
        return lag == -2 || acceptable == Long.MAX_VALUE || (lag >= 0 && lag <= acceptable);
    }

    /** Holders of each task when the standby phase began: the final ones, undoing the phase's moves. */
    private static Map<TaskId, Set<Recording>> startHolders(final List<Recording> clients, final List<Event> moves) {
        final Map<TaskId, Set<Recording>> holders = new HashMap<>();
        for (final Recording c : clients) {
            for (final TaskId t : c.activeTasks()) {
                holders.computeIfAbsent(t, k -> new HashSet<>()).add(c);
            }
            for (final TaskId t : c.standbyTasks()) {
                holders.computeIfAbsent(t, k -> new HashSet<>()).add(c);
            }
        }
        for (int i = moves.size() - 1; i >= 0; i--) {
            final Event e = moves.get(i);
            final Set<Recording> h = holders.computeIfAbsent(e.task(), k -> new HashSet<>());
            if (e.what().equals("assignStandby")) {
                h.remove(e.client());
            } else {
                h.add(e.client());
            }
        }
        return holders;
    }

    private static boolean sourceExists(final List<Recording> clients, final Set<Recording> held, final TaskId t,
                                        final Recording dest, final long acceptable) {
        final List<Recording> byLag = new ArrayList<>(clients);
        byLag.sort(Comparator.<Recording>comparingLong(c -> c.lagFor(t)).thenComparing(c -> c.id));
        for (final Recording c : clients) {
            if (caughtUp(c, t, acceptable) && !held.contains(c)) {
                return true;
            }
        }
        for (final Recording c : byLag) {
            if (c == dest) {
                return false;
            }
            if (!held.contains(c)) {
                return true;
            }
        }
        return false;
    }

    private static String list(final Set<TaskId> tasks) {
        if (tasks.isEmpty()) {
            return "-";
        }
        final StringJoiner j = new StringJoiner(",");
        for (final TaskId t : new TreeSet<>(tasks)) {
            j.add(t.subtopology() + "_" + t.partition());
        }
        return j.toString();
    }
}
