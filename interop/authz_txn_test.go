package interop

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnCommit runs one transaction that only commits an offset of group on
// t/0, as a transactional client of either generation does:
// transaction version 1 (InitProducerId v4, AddOffsetsToTxn, TxnOffsetCommit
// v4, EndTxn v4) or 2 (KIP-890: TxnOffsetCommit v5 adds the offsets
// partition itself, EndTxn v5). It returns each step's error code.
func txnCommit(c *rawConn, txnID, group string, offset int64, tv2 bool) (string, error) {
	var steps []string
	step := func(req kmsg.Request, code func(kmsg.Response) int16) (kmsg.Response, error) {
		resp, err := c.do(req)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kmsg.NameForKey(req.Key()), err)
		}
		steps = append(steps, fmt.Sprintf("%s=%v", kmsg.NameForKey(req.Key()), kerr.ErrorForCode(code(resp))))
		return resp, nil
	}
	// FindCoordinator creates the transaction log (its partitions come up
	// a moment later), and the previous round's markers may be in flight:
	// both are retried as clients retry them
	retry := func(req func() kmsg.Request, code func(kmsg.Response) int16) (kmsg.Response, error) {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			r, err := c.do(req())
			if err != nil {
				return nil, err
			}
			// CONCURRENT_TRANSACTIONS too: kerr does not mark it retriable,
			// yet the Java producer retries InitProducerId on it
			e := kerr.ErrorForCode(code(r))
			if e == nil || !(kerr.IsRetriable(e) || errors.Is(e, kerr.ConcurrentTransactions)) || time.Now().After(deadline) {
				steps = append(steps, fmt.Sprintf("%s=%v", kmsg.NameForKey(r.Key()), e))
				return r, nil
			}
		}
	}
	for typ, key := range []string{group, txnID} {
		if _, err := retry(func() kmsg.Request {
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.SetVersion(4)
			fc.CoordinatorType, fc.CoordinatorKeys = int8(typ), []string{key}
			return fc
		}, func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode }); err != nil {
			return "", err
		}
	}
	resp, err := retry(func() kmsg.Request {
		ip := kmsg.NewPtrInitProducerIDRequest()
		ip.SetVersion(4)
		ip.TransactionalID, ip.TransactionTimeoutMillis, ip.ProducerID, ip.ProducerEpoch = kmsg.StringPtr(txnID), 60000, -1, -1
		return ip
	}, func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode })
	if err != nil {
		return "", err
	}
	pid, epoch := resp.(*kmsg.InitProducerIDResponse).ProducerID, resp.(*kmsg.InitProducerIDResponse).ProducerEpoch
	version := int16(5)
	if !tv2 {
		version = 4
		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.SetVersion(3)
		ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = txnID, pid, epoch, group
		if _, err := step(ao, func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode }); err != nil {
			return "", err
		}
	}
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.SetVersion(version)
	tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = txnID, group, pid, epoch, -1
	tc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
	if _, err := step(tc, func(r kmsg.Response) int16 {
		return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}); err != nil {
		return "", err
	}
	et := kmsg.NewPtrEndTxnRequest()
	et.SetVersion(version)
	et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = txnID, pid, epoch, true
	if tv2 { // KIP-890: EndTxn v5 answers the bumped epoch; the request carries the current one
		et.ProducerEpoch = epoch
	}
	if _, err := step(et, func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }); err != nil {
		return "", err
	}
	return strings.Join(steps, " "), nil
}

// testTxnCommit: a transaction that commits an offset, run by the same
// principal straight to the broker and through coordhost, in both
// transaction versions, gets the same answers at every step and leaves
// the offset on the broker.
func testTxnCommit(t *testing.T, secure, chAddr string, admin *kgo.Client) {
	for i, tv2 := range []bool{false, true} {
		tv := map[bool]string{false: "transaction version 1", true: "transaction version 2"}[tv2]
		for j, addr := range []string{secure, chAddr} {
			c := dialKafka(t, addr)
			if err := c.login("exact", "SCRAM-SHA-256"); err != nil {
				t.Fatal(err)
			}
			offset := int64(5000 + 10*i + j)
			start := time.Now()
			got, err := txnCommit(c, "tx", "g", offset, tv2)
			if err != nil {
				t.Fatalf("%s via %s: %v", tv, addr, err)
			}
			t.Logf("%s via %s (%v): %s", tv, addr, time.Since(start).Round(time.Millisecond), got)
			for _, s := range strings.Fields(got) {
				if !strings.HasSuffix(s, "=<nil>") {
					t.Errorf("%s via %s: %s", tv, addr, got)
					break
				}
			}
			waitOffset(t, admin, "g", offset)
		}
	}
}

// waitOffset waits (bounded: the transaction markers are written after
// EndTxn answers) until the broker holds offset as group's commit on t/0.
func waitOffset(t *testing.T, admin *kgo.Client, group string, offset int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := committedSum(t, admin, group, "t")
		if got == offset {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s: the broker has offset %d, want %d", group, got, offset)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
