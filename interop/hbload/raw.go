package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The open-loop phases send over raw sockets by default (-open raw): one
// OS thread releases each request at its due time, writes it straight to
// the member's connection and reads the answers of every connection in
// the same epoll loop (raw_linux.go). The earlier sender (-open kgo), a
// paced release handed to one of -senders goroutines that each send
// through a kgo client, cost the generator 0.58–0.62 CPU-s per 10k
// heartbeats against 0.24 in its closed loop — about one of the machine's
// two cores at 17,000/s, taken from whichever server it measured.

// clientID is every connection's client ID, raw and kgo alike: a streams
// member whose client ID changes is updated, and that bumps its group's
// epoch (as in Kafka), so a member moving to the raw connections with
// another ID would start a rebalance.
const clientID = "hbload"

const (
	openRaw = "raw"
	openKgo = "kgo"
)

func parseOpen(s string) (string, error) { return parseChoice("open", s, openRaw, openKgo) }

// rawResult is what one open-loop window of the raw sender measured.
type rawResult struct {
	lat           []time.Duration
	errs, changed int64
	dues, rels    []time.Time // each request's due time and release
	err           error
}

// maxFrame bounds a response's size: a steady heartbeat's answer is tens
// of bytes, an assignment of a 1,000-task group some kilobytes.
const maxFrame = 1 << 20

// errShortFrame says a buffer does not hold a whole frame yet.
var errShortFrame = errors.New("short frame")

// nextFrame splits the first size-prefixed frame off buf: its body and
// the bytes after it; errShortFrame when buf does not hold it all yet.
func nextFrame(buf []byte) (body, rest []byte, err error) {
	if len(buf) < 4 {
		return nil, buf, errShortFrame
	}
	n := int32(binary.BigEndian.Uint32(buf))
	if n < 0 || n > maxFrame {
		return nil, buf, fmt.Errorf("response frame of %d bytes (bound %d)", n, maxFrame)
	}
	if len(buf)-4 < int(n) {
		return nil, buf, errShortFrame
	}
	return buf[4 : 4+n], buf[4+n:], nil
}

// parseHeartbeatResponse decodes one StreamsGroupHeartbeat response frame
// body of the given version: the correlation ID, the flexible header's
// tagged fields (skipped), the body.
func parseHeartbeatResponse(body []byte, version int16) (int32, *kmsg.StreamsGroupHeartbeatResponse, error) {
	if len(body) < 4 {
		return 0, nil, fmt.Errorf("response of %d bytes has no correlation ID", len(body))
	}
	corr := int32(binary.BigEndian.Uint32(body))
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.Version = version
	rest := body[4:]
	if resp.IsFlexible() {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return corr, nil, fmt.Errorf("response header: %w", err)
		}
	}
	if err := resp.ReadFrom(rest); err != nil {
		return corr, nil, fmt.Errorf("StreamsGroupHeartbeat v%d response: %w", version, err)
	}
	return corr, resp, nil
}

// skipTags skips a tagged-field section: a count, then each field's tag,
// size and bytes, all sizes as unsigned varints.
func skipTags(b []byte) ([]byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)) {
		return nil, errors.New("bad tag count")
	}
	b = b[w:]
	for ; n > 0; n-- {
		if _, w = binary.Uvarint(b); w <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[w:]
		size, w := binary.Uvarint(b)
		if w <= 0 || size > uint64(len(b)-w) {
			return nil, errors.New("bad tag size")
		}
		b = b[w+int(size):]
	}
	return b, nil
}

// heartbeatVersion is the StreamsGroupHeartbeat version the raw sender
// uses: the highest both kmsg and the server (ApiVersions over c) know.
func heartbeatVersion(ctx context.Context, c *coordinator) (int16, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "hbload", "1"
	resp, err := req.RequestWith(ctx, c)
	if err != nil {
		return 0, fmt.Errorf("ApiVersions: %w", err)
	}
	hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	for _, k := range resp.ApiKeys {
		if k.ApiKey == hb.Key() {
			return min(k.MaxVersion, hb.MaxVersion()), nil
		}
	}
	return 0, fmt.Errorf("the server at %s does not list StreamsGroupHeartbeat in ApiVersions", c.addr)
}
