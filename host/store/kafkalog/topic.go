package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrTopic is wrapped by Open when the state topic exists but cannot hold
// the store: another partition count, or a cleanup policy other than
// compact.
var ErrTopic = errors.New("state topic unusable")

// topicInfo is what Open learns of the state topic.
type topicInfo struct {
	clusterID       string
	partitions      int
	maxMessageBytes int
}

// ensureTopic creates the state topic if it is missing and checks it.
func ensureTopic(ctx context.Context, cl *kgo.Client, cfg Config) (topicInfo, error) {
	info, exists, err := describeTopic(ctx, cl, cfg.Topic)
	if err != nil {
		return info, err
	}
	if !exists {
		if err := createTopic(ctx, cl, cfg); err != nil {
			return info, err
		}
		if info, err = awaitCreated(ctx, cl, cfg); err != nil {
			return info, err
		}
	}
	if info.partitions != cfg.Partitions {
		return info, fmt.Errorf("state topic %q: %w: it has %d partitions and the store needs %d (store.partitions; "+
			"the partition of every group depends on the count, so use another topic or store.partitions=%d)",
			cfg.Topic, ErrTopic, info.partitions, cfg.Partitions, info.partitions)
	}
	policy, maxBytes, err := topicConfigs(ctx, cl, cfg.Topic)
	if err != nil {
		return info, err
	}
	if policy != "compact" {
		return info, fmt.Errorf("state topic %q: %w: cleanup.policy is %q, it must be compact "+
			"(with delete, the broker would drop state that replay needs)", cfg.Topic, ErrTopic, policy)
	}
	info.maxMessageBytes = maxBytes
	return info, nil
}

// awaitCreated waits, for at most cfg.Timeout, until the broker that
// answers Metadata lists the topic just created with all its partitions:
// a new topic reaches each broker's metadata a moment after CreateTopics
// returned, so one reading right after it may not show it yet.
func awaitCreated(ctx context.Context, cl *kgo.Client, cfg Config) (topicInfo, error) {
	deadline := time.Now().Add(cfg.Timeout)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		info, exists, err := describeTopic(ctx, cl, cfg.Topic)
		if err != nil {
			return info, err
		}
		if exists && info.partitions == cfg.Partitions {
			return info, nil
		}
		if time.Now().Add(wait).After(deadline) {
			if !exists {
				return info, fmt.Errorf("state topic %q: created, but not in the cluster's metadata after %v", cfg.Topic, cfg.Timeout)
			}
			return info, nil // the partition count check names the difference
		}
		select {
		case <-ctx.Done():
			return info, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// describeTopic returns the cluster id and the topic's partition count;
// exists is false when the cluster does not know the topic.
func describeTopic(ctx context.Context, cl *kgo.Client, topic string) (topicInfo, bool, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false // a broker's auto-creation would make it with the delete policy
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return topicInfo{}, false, fmt.Errorf("state topic %q: metadata: %w", topic, err)
	}
	var info topicInfo
	if resp.ClusterID != nil {
		info.clusterID = *resp.ClusterID
	}
	if len(resp.Topics) != 1 {
		return info, false, fmt.Errorf("state topic %q: metadata answered %d topics", topic, len(resp.Topics))
	}
	t := resp.Topics[0]
	switch err := kerr.ErrorForCode(t.ErrorCode); {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return info, false, nil
	case err != nil:
		return info, false, fmt.Errorf("state topic %q: metadata: %w", topic, err)
	}
	info.partitions = len(t.Partitions)
	return info, true, nil
}

func createTopic(ctx context.Context, cl *kgo.Client, cfg Config) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(cfg.Timeout.Milliseconds())
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = cfg.Topic, int32(cfg.Partitions), int16(cfg.ReplicationFactor)
	for _, c := range [][2]string{
		{"cleanup.policy", "compact"},
		{"min.insync.replicas", strconv.Itoa(cfg.MinInsyncReplicas)},
		{"unclean.leader.election.enable", "false"},
		{"max.message.bytes", strconv.Itoa(cfg.MaxMessageBytes)},
	} {
		rc := kmsg.NewCreateTopicsRequestTopicConfig()
		rc.Name, rc.Value = c[0], kmsg.StringPtr(c[1])
		t.Configs = append(t.Configs, rc)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("state topic %q: create: %w", cfg.Topic, err)
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("state topic %q: create answered %d topics", cfg.Topic, len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		msg := ""
		if m := resp.Topics[0].ErrorMessage; m != nil {
			msg = ": " + *m
		}
		return fmt.Errorf("state topic %q: create with %d partitions, replication factor %d: %w%s",
			cfg.Topic, cfg.Partitions, cfg.ReplicationFactor, err, msg)
	}
	return nil
}

// topicConfigs returns the topic's cleanup.policy and max.message.bytes.
func topicConfigs(ctx context.Context, cl *kgo.Client, topic string) (policy string, maxBytes int, err error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	r.ConfigNames = []string{"cleanup.policy", "max.message.bytes"}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return "", 0, fmt.Errorf("state topic %q: describe configs: %w", topic, err)
	}
	if len(resp.Resources) != 1 {
		return "", 0, fmt.Errorf("state topic %q: describe configs answered %d resources", topic, len(resp.Resources))
	}
	res := resp.Resources[0]
	if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
		return "", 0, fmt.Errorf("state topic %q: describe configs: %w", topic, err)
	}
	for _, c := range res.Configs {
		if c.Value == nil {
			continue
		}
		switch c.Name {
		case "cleanup.policy":
			policy = strings.ReplaceAll(*c.Value, " ", "")
		case "max.message.bytes":
			if maxBytes, err = strconv.Atoi(*c.Value); err != nil {
				return "", 0, fmt.Errorf("state topic %q: max.message.bytes %q: %w", topic, *c.Value, err)
			}
		}
	}
	if maxBytes <= batchOverhead+recordOverhead {
		return "", 0, fmt.Errorf("state topic %q: %w: max.message.bytes %d holds no record", topic, ErrTopic, maxBytes)
	}
	return policy, maxBytes, nil
}
