package interop

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetsUser commits through a coordhost with
// dataplane.offsets.identity=client (READ on group go and topic t) and
// deletes groups (DELETE on gdk and gdr).
const offsetsUser = "offsetsid"

var offsetsACLs = []acl{
	{"User:" + offsetsUser, rGroup, "go", literal, kmsg.ACLOperationRead, allow},
	{"User:" + offsetsUser, rTopic, "t", literal, kmsg.ACLOperationRead, allow},
	{"User:" + offsetsUser, rGroup, "gdk", literal, kmsg.ACLOperationDelete, allow},
	{"User:" + offsetsUser, rGroup, "gdr", literal, kmsg.ACLOperationDelete, allow},
}

// testOffsetsAsClient: coordhost with dataplane.offsets.identity=client
// starts (its start-up token check passes: delegation tokens enabled,
// admin a super user) and writes offsets as the client's principal with a
// delegation token it owns. An allowed commit is on the broker. Then the
// principal's READ on t is revoked on the broker while coordhost's cached
// decision (TTL 30 s) still allows it: coordhost's own check lets the
// commit through, the broker refuses the write for the principal
// (TOPIC_AUTHORIZATION_FAILED, no audit line of coordhost's), and the
// offset on the broker does not move — written under coordhost's
// identity (a super user), it would have.
func testOffsetsAsClient(t *testing.T, dir, secure string, admin *kgo.Client) {
	createACLs(t, admin, offsetsACLs)
	ch := startCoordhost(t, dir, secure, "--dataplane.sasl.mechanism=SCRAM-SHA-256",
		"--dataplane.sasl.username=admin", "--dataplane.sasl.password="+adminPassword,
		"--dataplane.authorization.cache.ttl=30s", "--dataplane.offsets.identity=client")
	through, direct := dialKafka(t, ch.addr), dialKafka(t, secure)
	for _, c := range []*rawConn{through, direct} {
		if err := c.login(offsetsUser, "SCRAM-SHA-256"); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(offset int64) int16 {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(8)
		req.Group, req.Generation = "go", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := through.do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(11); code != 0 {
		t.Fatalf("allowed commit answered %v", kerr.ErrorForCode(code))
	}
	checkCommitted(t, admin, "go", 11, true)

	deleteACL(t, admin, offsetsACLs[1])
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.SetVersion(7)
	fetch.Group = "go"
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := direct.do(fetch)
		if err != nil {
			t.Fatal(err)
		}
		if r := resp.(*kmsg.OffsetFetchResponse); len(r.Topics) == 1 && r.Topics[0].Partitions[0].ErrorCode == kerr.TopicAuthorizationFailed.Code {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the broker still lets the principal DESCRIBE t after 10s")
		}
	}
	if code := commit(22); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("commit after the broker revoked READ on t answered %v, want the broker's TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	for _, l := range ch.proc.grep("principal=User:" + offsetsUser + " ") {
		if strings.Contains(l, "authorization denied") {
			t.Fatalf("coordhost refused the commit itself, so the broker's refusal was not tested: %q", l)
		}
	}
	checkCommitted(t, admin, "go", 11, true)
	testDeleteGroupsAsClient(t, ch, through, direct, admin)
}

// testDeleteGroupsAsClient: DeleteGroups through the coordhost of
// testOffsetsAsClient deletes as the client's principal. gdk and gdr
// have offsets on the broker (committed by the admin); a DescribeGroups
// through coordhost caches the principal's operations on both (DELETE
// included, TTL 30 s); then the broker revokes DELETE on gdr. A
// DeleteGroups of both through coordhost deletes gdk's offsets and is
// answered the broker's GROUP_AUTHORIZATION_FAILED for gdr, without an
// audit line of coordhost's, and gdr's offsets stay on the broker —
// deleted under coordhost's identity (a super user), they would not.
func testDeleteGroupsAsClient(t *testing.T, ch *coordhost, through, direct *rawConn, admin *kgo.Client) {
	su := dialKafka(t, direct.nc.RemoteAddr().String()) // the super user, straight to the broker
	if err := su.login("admin", "SCRAM-SHA-256"); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"gdk", "gdr"} {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(8) // topic names
		req.Group, req.Generation = g, -1
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 33}}}}
		resp, err := su.do(req)
		if err != nil || resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("admin's commit to %s: %v %+v", g, err, resp)
		}
		checkCommitted(t, admin, g, 33, true)
	}
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Groups = []string{"gdk", "gdr"}
	dresp, err := through.do(describe)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range dresp.(*kmsg.DescribeGroupsResponse).Groups {
		if g.ErrorCode != 0 {
			t.Fatalf("DescribeGroups of %s through coordhost answered %v", g.Group, kerr.ErrorForCode(g.ErrorCode))
		}
	}
	deleteACL(t, admin, offsetsACLs[3])
	probe := kmsg.NewPtrOffsetDeleteRequest() // authorized with DELETE, deletes nothing
	probe.Group = "gdr"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := direct.do(probe)
		if err != nil {
			t.Fatal(err)
		}
		if resp.(*kmsg.OffsetDeleteResponse).ErrorCode == kerr.GroupAuthorizationFailed.Code {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the broker still lets the principal DELETE gdr after 10s")
		}
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.SetVersion(2)
	del.Groups = []string{"gdk", "gdr"}
	resp, err := through.do(del)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, g := range resp.(*kmsg.DeleteGroupsResponse).Groups {
		codes[g.Group] = g.ErrorCode
	}
	if codes["gdk"] != 0 || codes["gdr"] != kerr.GroupAuthorizationFailed.Code || len(codes) != 2 {
		t.Fatalf("DeleteGroups through coordhost answered %v, want gdk deleted and the broker's GROUP_AUTHORIZATION_FAILED for gdr", codes)
	}
	for _, l := range ch.proc.grep("principal=User:" + offsetsUser + " ") {
		if strings.Contains(l, "authorization denied") {
			t.Fatalf("coordhost refused the delete itself, so the broker's refusal was not tested: %q", l)
		}
	}
	checkCommitted(t, admin, "gdk", 33, false)
	checkCommitted(t, admin, "gdr", 33, true)
}
