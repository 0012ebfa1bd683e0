package io.coordhost.interop;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.HexFormat;
import java.util.List;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.JoinGroupRequest;
import org.apache.kafka.common.requests.MetadataRequest;
import org.apache.kafka.common.requests.OffsetCommitRequest;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.StreamsGroupHeartbeatRequest;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * gen: print request frames (header + body, no size prefix) built by Kafka's own classes,
 * one per line: name key version correlationId clientId hex.
 * decode (KEY VERSION CORR HEX)...: parse response frames (no size prefix) with Kafka's own
 * classes and print, per frame index, its error counts and data.
 * clients BOOTSTRAP TOPIC: produce three records with KafkaProducer (idempotent, acks=all),
 * read them back with KafkaConsumer on partition 0 (assign, no group), print the values.
 */
public final class WireFrames {
    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("gen")) {
            gen();
        } else if (args.length == 3 && args[0].equals("clients")) {
            clients(args[1], args[2]);
        } else if (args.length > 1 && args[0].equals("decode") && (args.length - 1) % 4 == 0) {
            for (int i = 1; i < args.length; i += 4) {
                decode((i - 1) / 4, Short.parseShort(args[i]), Short.parseShort(args[i + 1]), Integer.parseInt(args[i + 2]), args[i + 3]);
            }
        } else {
            throw new IllegalArgumentException("usage: gen | decode (KEY VERSION CORR HEX)... | clients BOOTSTRAP TOPIC");
        }
    }

    private static void emit(String name, AbstractRequest req, String clientId, int corr) {
        RequestHeader h = new RequestHeader(req.apiKey(), req.version(), clientId, corr);
        ByteBuffer b = req.serializeWithHeader(h);
        byte[] out = new byte[b.remaining()];
        b.get(out);
        System.out.println(name + " " + req.apiKey().id + " " + req.version() + " " + corr + " "
            + (clientId == null ? "-" : clientId) + " " + HexFormat.of().formatHex(out));
    }

    private static void gen() {
        emit("api_versions_v3", new ApiVersionsRequest.Builder(new ApiVersionsRequestData()
            .setClientSoftwareName("java-client").setClientSoftwareVersion("4.4.0"), (short) 3, (short) 3).build((short) 3), "java", 11);
        emit("api_versions_v0", new ApiVersionsRequest.Builder(new ApiVersionsRequestData(), (short) 0, (short) 0).build((short) 0), "java", 12);
        JoinGroupRequestData jg = new JoinGroupRequestData().setGroupId("orders").setSessionTimeoutMs(45000)
            .setRebalanceTimeoutMs(300000).setMemberId("").setProtocolType("consumer");
        jg.protocols().add(new JoinGroupRequestData.JoinGroupRequestProtocol().setName("range").setMetadata(new byte[] {0, 3, 1, 2}));
        emit("join_group_v5", new JoinGroupRequest.Builder(jg).build((short) 5), "java", 13);
        emit("join_group_v9_null_client", new JoinGroupRequest.Builder(jg).build((short) 9), null, 14);
        emit("metadata_v12", new MetadataRequest.Builder(new MetadataRequestData().setTopics(null).setAllowAutoTopicCreation(false)).build((short) 12), "java", 15);
        OffsetCommitRequestData oc = new OffsetCommitRequestData().setGroupId("orders").setGenerationIdOrMemberEpoch(7).setMemberId("m-1");
        oc.topics().add(new OffsetCommitRequestData.OffsetCommitRequestTopic().setName("in").setPartitions(List.of(
            new OffsetCommitRequestData.OffsetCommitRequestPartition().setPartitionIndex(2).setCommittedOffset(42))));
        emit("offset_commit_v9", OffsetCommitRequest.Builder.forTopicNames(oc).build((short) 9), "java", 16);
        StreamsGroupHeartbeatRequestData sh = new StreamsGroupHeartbeatRequestData().setGroupId("app").setMemberId("member-1")
            .setMemberEpoch(0).setRebalanceTimeoutMs(30000).setProcessId("p-1");
        emit("streams_group_heartbeat_v1", new StreamsGroupHeartbeatRequest.Builder(sh).build((short) 1), "java-streams", 17);
    }

    private static void clients(String bootstrap, String topic) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (String v : List.of("java-1", "java-2", "java-3")) {
                producer.send(new ProducerRecord<>(topic, 0, null, v)).get(20, TimeUnit.SECONDS);
            }
        } catch (Exception e) {
            throw new RuntimeException("produce through coordhost", e);
        }
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            List<String> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 20000;
            while (got.size() < 3 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    got.add(r.value());
                }
            }
            System.out.println("consumed " + String.join(",", got));
        }
    }

    private static void decode(int index, short key, short version, int corr, String hex) {
        ApiKeys api = ApiKeys.forId(key);
        RequestHeader h = new RequestHeader(api, version, "java", corr);
        AbstractResponse resp = AbstractResponse.parseResponse(ByteBuffer.wrap(HexFormat.of().parseHex(hex)), h);
        System.out.println(index + " errors " + new TreeMap<>(resp.errorCounts()));
        System.out.println(index + " data " + resp.data());
    }
}
