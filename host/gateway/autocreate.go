package gateway

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataCreating answers a Metadata request that may auto-create topics
// on the embedded data plane.
//
// The embedded cluster (kfake) persists the topics CreateTopics makes but
// not those a Metadata request auto-creates, so after a crash an
// auto-created topic and its acknowledged records would be gone. The
// gateway asks without auto-creation first; topics the data plane does not
// know are created with a CreateTopics on the client's own link (its
// principal, the data plane's default partition count and replication
// factor, as auto-creation uses), and the metadata asked again. A topic
// that cannot be created carries the CreateTopics error (for example
// INVALID_TOPIC_EXCEPTION or TOPIC_AUTHORIZATION_FAILED), as Kafka's
// auto-creation answers.
func (l *Link) metadataCreating(ctx context.Context, clientID *string, req *kmsg.MetadataRequest) (kmsg.Response, error) {
	probe := *req
	probe.AllowAutoTopicCreation = false
	resp, err := l.roundTrip(ctx, clientID, &probe)
	if err != nil {
		return nil, err
	}
	failed := make(map[string]int16)
	var missing []string
	for _, name := range unknownTopics(resp.(*kmsg.MetadataResponse)) {
		if illegalTopicName(name) == "" {
			missing = append(missing, name)
		} else {
			failed[name] = kerr.InvalidTopicException.Code
		}
	}
	if len(missing) == 0 {
		return withTopicErrors(resp, failed), nil
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version = min(l.dp.versions[ct.Key()].Max, ct.MaxVersion())
	ct.TimeoutMillis = int32(l.dp.cfg.RequestTimeout.Milliseconds())
	for _, name := range missing {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, -1, -1
		ct.Topics = append(ct.Topics, t)
	}
	cresp, err := l.roundTrip(ctx, clientID, ct)
	if err != nil {
		return nil, err
	}
	created := len(missing)
	for _, t := range cresp.(*kmsg.CreateTopicsResponse).Topics {
		if t.ErrorCode != 0 && t.ErrorCode != kerr.TopicAlreadyExists.Code {
			failed[t.Topic] = t.ErrorCode
			created--
		}
	}
	if created > 0 {
		if resp, err = l.roundTrip(ctx, clientID, &probe); err != nil {
			return nil, err
		}
	}
	return withTopicErrors(resp, failed), nil
}

// withTopicErrors sets the error of the named topics of a Metadata
// response.
func withTopicErrors(resp kmsg.Response, codes map[string]int16) kmsg.Response {
	mr := resp.(*kmsg.MetadataResponse)
	for i := range mr.Topics {
		if t := &mr.Topics[i]; t.Topic != nil {
			if code, ok := codes[*t.Topic]; ok {
				t.ErrorCode = code
			}
		}
	}
	return resp
}

// illegalTopicName applies Kafka's topic-name rules (Topic.validate): 1 to
// 249 characters of [a-zA-Z0-9._-], neither "." nor "..". It returns
// Kafka's message for an illegal name, "" for a legal one.
func illegalTopicName(n string) string {
	switch {
	case n == "":
		return "Topic name is illegal, it can't be empty"
	case n == "." || n == "..":
		return "Topic name cannot be \".\" or \"..\""
	case len(n) > 249:
		return "Topic name is illegal, it can't be longer than 249 characters, topic name: " + n
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return "Topic name \"" + n + "\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
		}
	}
	return ""
}

// createTopicsChecked forwards a CreateTopics to the embedded data plane,
// which accepts any name, answering the topics whose name Kafka refuses
// INVALID_TOPIC_EXCEPTION itself, as Kafka does.
func (l *Link) createTopicsChecked(ctx context.Context, clientID *string, req *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
	var legal []kmsg.CreateTopicsRequestTopic
	var refused []kmsg.CreateTopicsResponseTopic
	for _, t := range req.Topics {
		msg := illegalTopicName(t.Topic)
		if msg == "" {
			legal = append(legal, t)
			continue
		}
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, kerr.InvalidTopicException.Code, &msg
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		refused = append(refused, rt)
	}
	if len(refused) == 0 {
		return l.roundTrip(ctx, clientID, req)
	}
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	if len(legal) > 0 {
		rest := *req
		rest.Topics = legal
		r, err := l.roundTrip(ctx, clientID, &rest)
		if err != nil {
			return nil, err
		}
		resp = r.(*kmsg.CreateTopicsResponse)
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp, nil
}

// unknownTopics lists the topics of resp the data plane does not know
// (asked by name: a topic asked by id answers UNKNOWN_TOPIC_ID).
func unknownTopics(resp *kmsg.MetadataResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		if t.ErrorCode == kerr.UnknownTopicOrPartition.Code && t.Topic != nil && *t.Topic != "" {
			out = append(out, *t.Topic)
		}
	}
	return out
}
