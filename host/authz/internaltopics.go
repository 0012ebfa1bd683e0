package authz

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A streams group's missing internal topics (repartition and changelog
// topics) are created as Kafka 4.4 creates them: as the member's
// principal, and only when it may CREATE them (on the CLUSTER, or on each
// topic). coordhost never creates them under its own identity in front of
// an authenticated cluster: the CreateTopics goes over the client's own
// upstream session (any broker forwards it to the controller), first
// validate-only, so that a principal allowed some of the topics but not
// all creates none, as Kafka's gate before createStreamsInternalTopics.
// A refusal is reported in the heartbeat's MISSING_INTERNAL_TOPICS status
// with Kafka's wording.

// InternalTopics is implemented by the wrapped Handler when it leaves the
// creation of streams groups' internal topics to the client's session
// (the event loop in front of an authenticated cluster).
type InternalTopics interface {
	// InternalTopicsToCreate lists the internal topics group's last
	// heartbeat found missing.
	InternalTopicsToCreate(group string) []kmsg.CreateTopicsRequestTopic
	// InternalTopicsCreated tells that they were created.
	InternalTopicsCreated(group string)
}

// statusMissingInternalTopics is the StreamsGroupHeartbeat status code
// MISSING_INTERNAL_TOPICS.
const statusMissingInternalTopics = 3

// createInternalTopics creates, over the client's session, the internal
// topics an allowed heartbeat's answer reports missing, and adds a refusal
// or a failure to that status.
func (c *check) createInternalTopics(b *kmsg.StreamsGroupHeartbeatRequest, r kmsg.Response) (kmsg.Response, error) {
	resp, ok := r.(*kmsg.StreamsGroupHeartbeatResponse)
	it, creates := c.a.inner.(InternalTopics)
	if !ok || !creates || resp.ErrorCode != 0 || c.req.Session == nil {
		return r, nil
	}
	i := slices.IndexFunc(resp.Status, func(s kmsg.StreamsGroupHeartbeatResponseStatus) bool {
		return s.StatusCode == statusMissingInternalTopics
	})
	if i < 0 {
		return r, nil
	}
	topics := it.InternalTopicsToCreate(b.Group)
	if len(topics) == 0 {
		return r, nil
	}
	failed, unauthorized, err := c.createTopics(topics, true)
	if err == nil && len(unauthorized)+len(failed) == 0 {
		failed, unauthorized, err = c.createTopics(topics, false)
	}
	switch {
	case err != nil:
		c.a.cfg.Log.Warn("creating a streams group's internal topics as the client failed", "group", b.Group, "err", err)
		failed = []string{fmt.Sprintf("(%v)", err)}
	case len(unauthorized) > 0:
		for _, t := range unauthorized {
			c.logDenied(kmsg.ACLResourceTypeTopic, t, kmsg.ACLOperationCreate)
		}
		resp.Status[i].StatusDetail += "; Unauthorized to CREATE on topics " + strings.Join(unauthorized, ", ") + "."
		return resp, nil
	case len(failed) == 0:
		it.InternalTopicsCreated(b.Group)
		return resp, nil
	}
	resp.Status[i].StatusDetail += "; Creation failed: " + strings.Join(failed, ", ") + "."
	return resp, nil
}

// createTopics sends one CreateTopics over the client's session: the
// topics the cluster did not let the principal create, sorted, and the
// others it did not create (with their error), TOPIC_ALREADY_EXISTS being
// no failure.
func (c *check) createTopics(topics []kmsg.CreateTopicsRequestTopic, validateOnly bool) (failed, unauthorized []string, err error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7) // Kafka 2.8+; Kafka 4 closes the connection on v0 and v1
	req.Topics, req.ValidateOnly = topics, validateOnly
	r, err := c.req.Session.Ask(c.ctx, req)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range r.(*kmsg.CreateTopicsResponse).Topics {
		switch t.ErrorCode {
		case 0, kerr.TopicAlreadyExists.Code:
		case kerr.TopicAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code:
			unauthorized = append(unauthorized, t.Topic)
		default:
			msg := kerr.ErrorForCode(t.ErrorCode).Error()
			if t.ErrorMessage != nil {
				msg = *t.ErrorMessage
			}
			failed = append(failed, fmt.Sprintf("%s (%s)", t.Topic, msg))
		}
	}
	slices.Sort(unauthorized)
	return failed, unauthorized, nil
}
