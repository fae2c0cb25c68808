// groupscope's Kafka Streams test application: a real Streams client (KIP-1071, group.protocol=streams)
// for the tests and the demo, started as its own JVM by collectors/demo/streams_app/__init__.py, which
// compiles this file with javac at first use (no build tool, no jar in the repository).
//
// Topology (two sub-topologies, so the group has a repartition topic and a changelog topic, as real
// Streams applications do):
//   input (text lines) -> split into words -> groupBy(word)   [repartition: APP-words-repartition]
//   -> count() in the state store "word-counts"                [changelog:  APP-word-counts-changelog]
//   -> output topic: key = word, value = the count as a decimal string (readable by any client)
//
// Command line: --bootstrap-servers B --application-id A --input-topic I --output-topic O
//   [--client-id C] [--state-dir D] [--group-protocol streams|classic] [--commit-interval-ms N]
//   [--config-file F] [--config key=value]...   (any further StreamsConfig setting; --config wins over
//   the file, the file over the above). The file is read once, at start, as UTF-8 java.util.Properties:
//   the launcher puts the client's security settings there (a SASL password, a key), never on the
//   command line, where every user of the machine can read them (collectors/demo/streams_app/security.py).
//
// stdout carries only JSON lines, one per event, flushed at once, for the launcher to wait on:
//   {"event":"starting", ...}  the settings it runs with
//   {"event":"state","state":"RUNNING","old":"REBALANCING"}   every KafkaStreams state change
//   {"event":"tasks","active":["0_0",...],"standby":[...],"partitions":{"0_0":["input-0"],...}}
//       whenever this instance's assignment changes (polled every 200 ms)
//   {"event":"error","thread":"...","error":"..."}  an uncaught exception in a stream thread
//   {"event":"closed","clean":true}   after KafkaStreams.close and its NOT_RUNNING state: the last line
// Logs go to log4j2 (the launcher points it at a file), never to stdout.
//
// Stopping: a line "close" on stdin, the end of stdin (the launcher went away), or SIGTERM closes
// KafkaStreams and leaves the group (CloseOptions LEAVE_GROUP: the member is gone at once, not when its
// session expires); SIGKILL is the crash case, the member then stays until its session times out.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public final class GroupscopeStreamsApp {
    public static final String STORE = "word-counts";
    public static final String REPARTITION = "words";

    private GroupscopeStreamsApp() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new TreeMap<>();
        Properties extra = new Properties();
        for (int i = 0; i < args.length; i++) {
            String name = args[i];
            if (!name.startsWith("--") || i + 1 >= args.length) {
                usage("bad argument: " + name);
            }
            String value = args[++i];
            if (name.equals("--config")) {
                int eq = value.indexOf('=');
                if (eq <= 0) {
                    usage("--config wants key=value, got: " + value);
                }
                extra.setProperty(value.substring(0, eq), value.substring(eq + 1));
            } else {
                opts.put(name.substring(2), value);
            }
        }
        for (String required : List.of("bootstrap-servers", "application-id", "input-topic", "output-topic")) {
            if (!opts.containsKey(required)) {
                usage("missing --" + required);
            }
        }
        String input = opts.get("input-topic");
        String output = opts.get("output-topic");

        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, opts.get("bootstrap-servers"));
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, opts.get("application-id"));
        if (opts.containsKey("client-id")) {
            props.put(StreamsConfig.CLIENT_ID_CONFIG, opts.get("client-id"));
        }
        if (opts.containsKey("state-dir")) {
            props.put(StreamsConfig.STATE_DIR_CONFIG, opts.get("state-dir"));
        }
        // KIP-1071: the broker assigns tasks (StreamsGroupHeartbeat); "classic" is the old protocol.
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, opts.getOrDefault("group-protocol", "streams"));
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        // Commits (and so the output and the committed offsets a monitor sees) every half second.
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Long.parseLong(opts.getOrDefault("commit-interval-ms", "500")));
        // No record cache: every count update goes to the changelog and the output at once, so a test
        // sees each record's effect after one commit interval.
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        if (opts.containsKey("config-file")) {
            Properties file = new Properties();
            try (Reader in = Files.newBufferedReader(Paths.get(opts.get("config-file")), StandardCharsets.UTF_8)) {
                file.load(in);
            }
            props.putAll(file);
        }
        props.putAll(extra);

        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> lines = builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()));
        lines.flatMapValues(line -> words(line))
                .groupBy((key, word) -> word, Grouped.with(REPARTITION, Serdes.String(), Serdes.String()))
                .count(Materialized.as(STORE))
                .toStream()
                .mapValues(count -> Long.toString(count))
                .to(output, Produced.with(Serdes.String(), Serdes.String()));
        Topology topology = builder.build(props);

        KafkaStreams streams = new KafkaStreams(topology, props);
        CountDownLatch closed = new CountDownLatch(1);
        AtomicBoolean closing = new AtomicBoolean(false);

        emit("{\"event\":\"starting\",\"application_id\":" + quote(opts.get("application-id"))
                + ",\"client_id\":" + quote(props.getProperty(StreamsConfig.CLIENT_ID_CONFIG, ""))
                + ",\"group_protocol\":" + quote(String.valueOf(props.get(StreamsConfig.GROUP_PROTOCOL_CONFIG)))
                // how it connects, never a secret: the protocol and the SASL mechanism, not the JAAS line
                + ",\"security_protocol\":" + quote(props.getProperty("security.protocol", "PLAINTEXT"))
                + ",\"sasl_mechanism\":" + quote(props.getProperty("sasl.mechanism", ""))
                + ",\"input\":" + quote(input) + ",\"output\":" + quote(output)
                + ",\"pid\":" + ProcessHandle.current().pid()
                + ",\"topology\":" + quote(topology.describe().toString()) + "}");
        // Counted down once the client has stopped: close() may return before the last state change
        // is reported (another thread makes it), and "closed" is to be the last line.
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, old) -> {
            emit("{\"event\":\"state\",\"state\":" + quote(now.name()) + ",\"old\":" + quote(old.name()) + "}");
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) {
                stopped.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            emit("{\"event\":\"error\",\"thread\":" + quote(Thread.currentThread().getName())
                    + ",\"error\":" + quote(String.valueOf(e)) + "}");
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });

        Runnable close = () -> {
            if (closing.compareAndSet(false, true)) {
                boolean clean = streams.close(CloseOptions.timeout(Duration.ofSeconds(15))
                        .withGroupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP));
                try {
                    stopped.await(5, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                emit("{\"event\":\"closed\",\"clean\":" + clean + "}");
                closed.countDown();
            }
            try {
                closed.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        // SIGTERM (and SIGINT) run the shutdown hooks: close there, and the JVM exits after.
        Runtime.getRuntime().addShutdownHook(new Thread(close, "groupscope-shutdown"));

        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.trim().equals("close")) {
                        break;
                    }
                }
            } catch (Exception e) {
                // stdin gone: the same as its end
            }
            close.run();
        }, "groupscope-stdin");
        stdin.setDaemon(true);

        Thread tasks = new Thread(() -> reportTasks(streams, closing), "groupscope-tasks");
        tasks.setDaemon(true);

        streams.start();
        stdin.start();
        tasks.start();
        closed.await();
        System.exit(0);
    }

    private static List<String> words(String line) {
        if (line == null) {
            return Collections.emptyList();
        }
        List<String> out = new ArrayList<>();
        for (String w : line.toLowerCase(Locale.ROOT).split("\\W+")) {
            if (!w.isEmpty()) {
                out.add(w);
            }
        }
        return out;
    }

    /** Emits a "tasks" event whenever this instance's active or standby tasks change. */
    private static void reportTasks(KafkaStreams streams, AtomicBoolean closing) {
        String last = null;
        while (!closing.get()) {
            try {
                KafkaStreams.State state = streams.state();
                if (state == KafkaStreams.State.RUNNING || state == KafkaStreams.State.REBALANCING) {
                    TreeMap<String, List<String>> active = new TreeMap<>();
                    List<String> standby = new ArrayList<>();
                    for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
                        for (TaskMetadata task : thread.activeTasks()) {
                            List<String> parts = new ArrayList<>();
                            for (TopicPartition tp : task.topicPartitions()) {
                                parts.add(tp.topic() + "-" + tp.partition());
                            }
                            Collections.sort(parts);
                            active.put(task.taskId().toString(), parts);
                        }
                        for (TaskMetadata task : thread.standbyTasks()) {
                            standby.add(task.taskId().toString());
                        }
                    }
                    Collections.sort(standby);
                    StringBuilder json = new StringBuilder("{\"event\":\"tasks\",\"state\":")
                            .append(quote(state.name())).append(",\"active\":")
                            .append(list(new ArrayList<>(active.keySet()))).append(",\"standby\":")
                            .append(list(standby)).append(",\"partitions\":{");
                    boolean first = true;
                    for (Map.Entry<String, List<String>> e : active.entrySet()) {
                        json.append(first ? "" : ",").append(quote(e.getKey())).append(':').append(list(e.getValue()));
                        first = false;
                    }
                    json.append("}}");
                    // the state is in the line for the reader, not in what counts as a change
                    String key = list(new ArrayList<>(active.keySet())) + list(standby);
                    if (!key.equals(last)) {
                        emit(json.toString());
                        last = key;
                    }
                }
                Thread.sleep(200);
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                // the client closing or between states: try again on the next round
                try {
                    Thread.sleep(200);
                } catch (InterruptedException ie) {
                    return;
                }
            }
        }
    }

    private static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    private static String list(List<String> items) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < items.size(); i++) {
            b.append(i == 0 ? "" : ",").append(quote(items.get(i)));
        }
        return b.append(']').toString();
    }

    private static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    private static void usage(String why) {
        System.err.println(why);
        System.err.println("usage: GroupscopeStreamsApp --bootstrap-servers B --application-id A --input-topic I"
                + " --output-topic O [--client-id C] [--state-dir D] [--group-protocol streams|classic]"
                + " [--commit-interval-ms N] [--config-file F] [--config key=value]...");
        System.exit(2);
    }
}
