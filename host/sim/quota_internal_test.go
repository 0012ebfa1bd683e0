package sim

import (
	"testing"
)

// TestQuotaLinkFollowsKafka: the restore quota's sensor as Kafka 4.4's
// broker keeps it (Rate over 11 samples of 1 s, the window padded to 10
// full samples), worked out by hand for a quota of 1000 bytes/s and
// responses of 200 bytes every 5 ms from a fresh sensor at 10 s:
// response k passes while 200(k+1) bytes over the window 10 s + 5k ms
// stay within the quota, i.e. k <= 50; response 51 would make 10,400
// bytes over 10.255 s, so it is throttled for 10.4 s - 10.255 s = 145 ms
// and not counted; the next, at 10.405 s, passes.
func TestQuotaLinkFollowsKafka(t *testing.T) {
	l := &quotaLink{q: &RestoreQuota{BytesPerS: 1000, FetchMaxBytes: 200, RecordBytes: 1}}
	at := int64(10_000)
	for k := range 51 {
		if ms := l.throttleMs(200, at+5*int64(k)); ms != 0 {
			t.Fatalf("response %d throttled %d ms, want none", k, ms)
		}
	}
	before := l.rate(at + 255)
	if ms := l.throttleMs(200, at+255); ms != 145 {
		t.Fatalf("response 51 throttled %d ms, want 145", ms)
	}
	if after := l.rate(at + 255); after != before {
		t.Fatalf("a throttled response counted: rate %v, was %v", after, before)
	}
	if ms := l.throttleMs(200, at+405); ms != 0 {
		t.Fatalf("the response after the throttle throttled %d ms, want none", ms)
	}
}

// TestQuotaLinkStallsAfterBurst: a consumer that fetches 200 bytes again 5
// ms after each response (after its throttle when throttled), as the real
// restore consumers of sim-validate's limited instances did: once the
// first second's burst filled the window, the window stays padded to
// about 10 s while the burst's sample is kept (11 s), so each retry a
// second later is throttled about a second again — runs of throttles of
// about 1000 ms, nothing restored, as the real restore consumers logged
// ("throttled for 999 ms", ten in a row) — and the average over a minute
// is the quota.
func TestQuotaLinkStallsAfterBurst(t *testing.T) {
	l := &quotaLink{q: &RestoreQuota{BytesPerS: 1000, FetchMaxBytes: 200, RecordBytes: 1}}
	var passed int64
	var lastPass int64
	longest, run := int64(0), 0
	stall, stalls := int64(0), 0
	for at := int64(10_000); at < 70_000; {
		ms := l.throttleMs(200, at)
		if ms == 0 {
			passed += 200
			longest = max(longest, at-lastPass)
			lastPass = at
			run = 0
			at += 5
			continue
		}
		if ms >= 900 && ms <= 1100 {
			if run++; run == 8 {
				stalls++
				stall = max(stall, at)
			}
		}
		at += ms + 5
	}
	if stalls == 0 || longest < 9_000 {
		t.Errorf("no stall: %d runs of 8 throttles of about a second, longest gap between responses %d ms", stalls, longest)
	}
	if passed < 56_000 || passed > 72_000 {
		t.Errorf("%d bytes passed in 60 s, want about the quota's 60,000 (the first window's burst above it)", passed)
	}
	t.Logf("passed %d bytes, longest gap %d ms, %d stalls (last at %d ms)", passed, longest, stalls, stall)
}
