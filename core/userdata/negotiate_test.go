package userdata

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

// javaClient models the version handling of one classic Kafka Streams 4.4
// client, from StreamsPartitionAssignor: the subscription it sends
// (usedSubscriptionMetadataVersion, LATEST_SUPPORTED_VERSION) and what
// onAssignment -> validateMetadataVersions / maybeUpdateSubscriptionVersion
// does with an assignment's versions.
type javaClient struct {
	used   int32 // usedSubscriptionMetadataVersion
	latest int32 // the client's LATEST_SUPPORTED_VERSION (12 for a "future" client)
}

// subscriptionBytes is what the client puts in JoinGroup userdata. A future
// client (version 12) is laid out like StreamsUpgradeTest's
// FutureStreamsPartitionAssignor: version, latest, then a v3-6 style body.
func (c *javaClient) subscriptionBytes(t *testing.T) []byte {
	t.Helper()
	if c.used > LatestSupportedVersion {
		b := binary.BigEndian.AppendUint32(nil, uint32(c.used))
		b = binary.BigEndian.AppendUint32(b, uint32(c.latest))
		return append(b, make([]byte, 16+4+4+4)...) // uuid, empty prev, empty standby, empty endpoint
	}
	s := &SubscriptionInfo{Version: c.used, LatestSupportedVersion: c.latest}
	b, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// onAssignment returns true when the client schedules an immediate rebalance
// because of the assignment's versions.
func (c *javaClient) onAssignment(a *AssignmentInfo) (rejoinNow bool, err error) {
	if a.ErrorCode != ErrCodeNone {
		return false, nil
	}
	if a.Version > c.used {
		return false, errors.New("TaskAssignmentException: got an assignment with higher version")
	}
	if a.CommonlySupportedVersion > c.latest {
		return false, errors.New("TaskAssignmentException: can't upgrade to metadata version greater than we support")
	}
	if a.Version >= EarliestProbeableVersion {
		if a.CommonlySupportedVersion > c.used {
			c.used = a.CommonlySupportedVersion
			return true, nil
		}
		if a.Version < c.used {
			c.used = a.CommonlySupportedVersion
			return true, nil
		}
	}
	return false, nil
}

// negotiator picks the assignment versions for member i of a group.
type negotiator func(subs []*SubscriptionInfo, i int) Negotiation

// negotiate is Negotiate as a negotiator: one answer for the whole group.
func negotiate(subs []*SubscriptionInfo, _ int) Negotiation { return Negotiate(subs) }

// rebalance runs rounds of JoinGroup (decoding every member's real bytes),
// negotiation and SyncGroup (encoding and decoding a real AssignmentInfo)
// until no client asks for an immediate rebalance, and returns how many
// rounds that took, or maxRounds+1 if it never settled.
func rebalance(t *testing.T, clients []*javaClient, negotiate negotiator, maxRounds int) int {
	t.Helper()
	for round := 1; round <= maxRounds; round++ {
		subs := make([]*SubscriptionInfo, len(clients))
		for i, c := range clients {
			s, err := DecodeSubscriptionInfo(c.subscriptionBytes(t))
			if err != nil {
				t.Fatalf("round %d: member %d: %v", round, i, err)
			}
			subs[i] = s
		}
		rejoin := false
		for i, c := range clients {
			n := negotiate(subs, i)
			if n.Err != nil {
				t.Fatalf("round %d: negotiation failed: %v", round, n.Err)
			}
			b, err := (&AssignmentInfo{Version: n.Version, CommonlySupportedVersion: n.CommonlySupported, NextRebalanceMs: NoRebalance}).Encode()
			if err != nil {
				t.Fatalf("round %d: encode assignment v%d: %v", round, n.Version, err)
			}
			a, err := DecodeAssignmentInfo(b)
			if err != nil {
				t.Fatal(err)
			}
			again, err := c.onAssignment(a)
			if err != nil {
				t.Fatalf("round %d: member %d (used %d, latest %d): %v", round, i, c.used, c.latest, err)
			}
			rejoin = rejoin || again
		}
		if !rejoin {
			return round
		}
	}
	return maxRounds + 1
}

func TestNegotiateVersions(t *testing.T) {
	for _, tc := range []struct {
		name           string
		members        [][2]int32 // used, latest
		version, cs    int32
		probing        bool
		rounds         int   // rounds until stable, per the Java client model
		settledVersion int32 // every client's used version afterwards
	}{
		{"all current", [][2]int32{{11, 11}, {11, 11}}, 11, 11, false, 1, 11},
		{"rolling upgrade from 3.0", [][2]int32{{10, 10}, {11, 11}}, 10, 10, false, 2, 10},
		{"end of rolling upgrade", [][2]int32{{10, 11}, {10, 11}}, 10, 11, false, 2, 11},
		{"downgraded member next to fresh one", [][2]int32{{10, 11}, {11, 11}}, 10, 11, false, 2, 11},
		{"future member probing", [][2]int32{{12, 12}, {11, 11}}, 11, 11, true, 2, 11},
		{"all future members stay at 11", [][2]int32{{12, 12}, {12, 12}}, 11, 11, true, 2, 11},
		{"pre-probing member", [][2]int32{{2, -1}, {11, 11}}, 2, -1, false, 1, 0},
		{"v3 member", [][2]int32{{3, 3}, {11, 11}}, 3, 3, false, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var clients []*javaClient
			var subs []*SubscriptionInfo
			for _, m := range tc.members {
				c := &javaClient{used: m[0], latest: m[1]}
				if m[1] == UnknownVersion {
					c.latest = m[0]
				}
				s, err := DecodeSubscriptionInfo(c.subscriptionBytes(t))
				if err != nil {
					t.Fatal(err)
				}
				clients, subs = append(clients, c), append(subs, s)
			}
			n := Negotiate(subs)
			if n.Version != tc.version || n.CommonlySupported != tc.cs || n.VersionProbing != tc.probing || n.Err != nil {
				t.Fatalf("Negotiate = %+v, want version %d commonly %d probing %v", n, tc.version, tc.cs, tc.probing)
			}
			if got := rebalance(t, clients, negotiate, 10); got != tc.rounds {
				t.Fatalf("settled after %d rounds, want %d", got, tc.rounds)
			}
			for i, c := range clients {
				if tc.settledVersion != 0 && c.used != tc.settledVersion {
					t.Errorf("member %d settled at version %d, want %d", i, c.used, tc.settledVersion)
				}
			}
		})
	}
}

// TestNegotiateLoopCase is the loop-causing case of the reference's sharp
// edges: answering a member below its version while telling it that a
// version at or above its own is commonly supported makes it "downgrade" to
// that same version and rejoin immediately, for ever. Two plausible ways to
// get there are shown to loop, and Negotiate is shown to settle on the same
// groups: taking the commonly supported version from the member itself
// rather than the group, and an uncapped minimum of latest-supported
// versions in an all-future group.
func TestNegotiateLoopCase(t *testing.T) {
	ownLatest := func(subs []*SubscriptionInfo, i int) Negotiation {
		n := Negotiate(subs)
		n.CommonlySupported = min(subs[i].LatestSupportedVersion, LatestSupportedVersion)
		return n
	}
	uncapped := func(subs []*SubscriptionInfo, _ int) Negotiation {
		n := Negotiate(subs)
		n.CommonlySupported = subs[0].LatestSupportedVersion
		for _, s := range subs {
			n.CommonlySupported = min(n.CommonlySupported, s.LatestSupportedVersion)
		}
		return n
	}
	for _, tc := range []struct {
		name    string
		members [][2]int32
		wrong   negotiator
	}{
		{"member's own latest as commonly supported, next to a 3.0 member", [][2]int32{{10, 10}, {11, 11}}, ownLatest},
		{"uncapped commonly supported in an all-future group", [][2]int32{{12, 12}, {12, 12}}, uncapped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mk := func() []*javaClient {
				var cs []*javaClient
				for _, m := range tc.members {
					cs = append(cs, &javaClient{used: m[0], latest: m[1]})
				}
				return cs
			}
			if got := rebalance(t, mk(), tc.wrong, 20); got <= 20 {
				t.Fatalf("the wrong negotiation settled after %d rounds; the case no longer shows the loop", got)
			}
			if got := rebalance(t, mk(), negotiate, 20); got > 2 {
				t.Fatalf("Negotiate needed %d rounds, want at most 2", got)
			}
		})
	}
}

// TestNegotiateConverges: for random groups of Java clients (any mix of
// versions 1–12 a real client can be in), repeated rebalances with
// Negotiate settle within 3 rounds and never make a client throw.
func TestNegotiateConverges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for seed := 0; seed < 1000; seed++ {
		var clients []*javaClient
		hasOld, hasFuture := false, false
		for range 1 + rng.IntN(5) {
			latest := int32(1 + rng.IntN(12))
			used := latest
			if latest >= EarliestProbeableVersion && rng.IntN(3) == 0 {
				used = EarliestProbeableVersion + int32(rng.IntN(int(latest-EarliestProbeableVersion+1)))
			}
			hasOld = hasOld || used < EarliestProbeableVersion
			hasFuture = hasFuture || used > LatestSupportedVersion
			clients = append(clients, &javaClient{used: used, latest: latest})
		}
		if hasOld && hasFuture {
			continue // an assignment error by design; see TestNegotiateFutureNextToPreProbing
		}
		if got := rebalance(t, clients, negotiate, 3); got > 3 {
			t.Fatalf("seed %d: group did not settle in 3 rounds", seed)
		}
	}
}

func TestNegotiateFutureNextToPreProbing(t *testing.T) {
	n := Negotiate([]*SubscriptionInfo{
		{Version: 12, LatestSupportedVersion: 12},
		{Version: 2, LatestSupportedVersion: UnknownVersion},
	})
	if n.Err == nil {
		t.Fatalf("Negotiate = %+v, want an error (Java answers ASSIGNMENT_ERROR)", n)
	}
	a := ErrorAssignment(ErrCodeAssignmentError)
	b, err := a.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeAssignmentInfo(b)
	if err != nil || got.Version != 11 || got.ErrorCode != ErrCodeAssignmentError || len(got.ActiveTasks) != 0 {
		t.Fatalf("error assignment decoded as %+v, %v", got, err)
	}
}
