package wire

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/internal/testtool"
)

var updateJava = flag.Bool("update-java", false, "rewrite testdata/java-request-frames.txt from the Java generator")

const (
	javaDir    = "../../interop/wireframes"
	javaMain   = "io.coordhost.interop.WireFrames"
	javaFrames = "testdata/java-request-frames.txt"
)

type javaFrame struct {
	name          string
	key, version  int16
	corr          int32
	clientID      *string
	frame         []byte
	originalIndex int
}

func readJavaFrames(t *testing.T, text string) []javaFrame {
	t.Helper()
	var out []javaFrame
	for i, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) != 6 {
			t.Fatalf("line %d: %q", i+1, line)
		}
		key, _ := strconv.Atoi(f[1])
		ver, _ := strconv.Atoi(f[2])
		corr, _ := strconv.Atoi(f[3])
		b, err := hex.DecodeString(f[5])
		if err != nil {
			t.Fatal(err)
		}
		jf := javaFrame{name: f[0], key: int16(key), version: int16(ver), corr: int32(corr), frame: b, originalIndex: i}
		if f[4] != "-" {
			jf.clientID = &f[4]
		}
		out = append(out, jf)
	}
	return out
}

// TestParsesJavaRequestFrames decodes frames Kafka's Java classes built:
// header v1 and v2 (flexible, tagged fields), nullable client id, bodies;
// and kmsg re-encodes each request to the same bytes.
func TestParsesJavaRequestFrames(t *testing.T) {
	raw, err := os.ReadFile(javaFrames)
	if err != nil {
		t.Fatal(err)
	}
	frames := readJavaFrames(t, string(raw))
	if len(frames) < 7 {
		t.Fatalf("only %d golden frames", len(frames))
	}
	for _, jf := range frames {
		req, err := ParseRequest(jf.frame)
		if err != nil {
			t.Fatalf("%s: %v", jf.name, err)
		}
		if req.Key != jf.key || req.Version != jf.version || req.CorrelationID != jf.corr || (req.ClientID == nil) != (jf.clientID == nil) ||
			(jf.clientID != nil && *req.ClientID != *jf.clientID) {
			t.Errorf("%s: header %+v", jf.name, req)
		}
		var opts []kmsg.RequestFormatterOpt
		if jf.clientID != nil {
			opts = append(opts, kmsg.FormatterClientID(*jf.clientID))
		}
		if again := kmsg.NewRequestFormatter(opts...).AppendRequest(nil, req.Body, jf.corr)[4:]; !bytes.Equal(again, jf.frame) {
			t.Errorf("%s: kmsg re-encodes to\n%x\nJava wrote\n%x", jf.name, again, jf.frame)
		}
		checkJavaBody(t, jf.name, req.Body)
	}
}

func checkJavaBody(t *testing.T, name string, body kmsg.Request) {
	t.Helper()
	ok := true
	switch b := body.(type) {
	case *kmsg.ApiVersionsRequest:
		ok = b.Version == 0 || (b.ClientSoftwareName == "java-client" && b.ClientSoftwareVersion == "4.4.0")
	case *kmsg.JoinGroupRequest:
		ok = b.Group == "orders" && b.SessionTimeoutMillis == 45000 && len(b.Protocols) == 1 && b.Protocols[0].Name == "range" &&
			bytes.Equal(b.Protocols[0].Metadata, []byte{0, 3, 1, 2})
	case *kmsg.OffsetCommitRequest:
		ok = b.Group == "orders" && b.Generation == 7 && b.MemberID == "m-1" && b.Topics[0].Topic == "in" &&
			b.Topics[0].Partitions[0].Partition == 2 && b.Topics[0].Partitions[0].Offset == 42
	case *kmsg.StreamsGroupHeartbeatRequest:
		ok = b.Group == "app" && b.MemberID == "member-1" && b.RebalanceTimeoutMillis == 30000 && b.ProcessID != nil && *b.ProcessID == "p-1"
	case *kmsg.MetadataRequest:
		ok = b.Topics == nil && !b.AllowAutoTopicCreation
	}
	if !ok {
		t.Errorf("%s: body decoded as %+v", name, body)
	}
}

// TestJavaRequestFramesAreCurrent re-generates the golden frames with Java.
func TestJavaRequestFramesAreCurrent(t *testing.T) {
	out := testtool.JavaMain(t, javaDir, javaMain, "gen")
	if *updateJava {
		if err := os.WriteFile(javaFrames, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(javaFrames)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Fatalf("Java now generates\n%s\ngolden file has\n%s", out, want)
	}
}

// TestJavaDecodesOurResponses: Kafka's own response parser reads frames
// AppendResponse wrote — header v0 and v1, ApiVersions' special header,
// error responses of group APIs.
func TestJavaDecodesOurResponses(t *testing.T) {
	c := &conn{s: &Server{cfg: Config{Table: NewTable(kafka44)}}}
	join := func(v int16) kmsg.Request { r := kmsg.NewPtrJoinGroupRequest(); r.SetVersion(v); return r }
	sgh := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	sgh.SetVersion(1)
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.SetVersion(9)
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "in", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 2}}}}
	cases := []struct {
		name       string
		resp       kmsg.Response
		wantErrors string
		wantData   string
	}{
		{"join_group_v5", ErrorResponse(join(5), 15), "{COORDINATOR_NOT_AVAILABLE=1}", "errorCode=15"},
		{"join_group_v9", ErrorResponse(join(9), 15), "{COORDINATOR_NOT_AVAILABLE=1}", "errorCode=15"},
		{"streams_group_heartbeat_v1", ErrorResponse(sgh, 15), "{COORDINATOR_NOT_AVAILABLE=1}", "errorCode=15"},
		{"offset_commit_v9", ErrorResponse(oc, 15), "{COORDINATOR_NOT_AVAILABLE=1}", "partitionIndex=2"},
		{"api_versions_v3", c.apiVersions(0, 3), "{NONE=1}", "apiKey=11, minVersion=0, maxVersion=9"},
		{"api_versions_v0_unsupported", c.apiVersions(35, 0), "{UNSUPPORTED_VERSION=1}", "apiKey=18"},
	}
	args := []string{"decode"}
	for i, tc := range cases {
		frame := AppendResponse(nil, int32(100+i), tc.resp)[4:]
		args = append(args, strconv.Itoa(int(tc.resp.Key())), strconv.Itoa(int(tc.resp.GetVersion())), strconv.Itoa(100+i), hex.EncodeToString(frame))
	}
	lines := map[string]string{}
	for _, l := range strings.Split(string(testtool.JavaMain(t, javaDir, javaMain, args...)), "\n") {
		if f := strings.SplitN(l, " ", 3); len(f) == 3 {
			lines[f[0]+" "+f[1]] = f[2]
		}
	}
	for i, tc := range cases {
		errs, data := lines[strconv.Itoa(i)+" errors"], lines[strconv.Itoa(i)+" data"]
		if errs != tc.wantErrors || !strings.Contains(data, tc.wantData) {
			t.Errorf("%s: Java decoded errors %s, data %s; want errors %s and data containing %q", tc.name, errs, data, tc.wantErrors, tc.wantData)
		}
	}
}
