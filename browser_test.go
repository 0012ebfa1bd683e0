package coordhost_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/sim"
	"github.com/coordhost/coordhost/internal/browsertest"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
	sticky "github.com/coordhost/coordhost/plugins/assignor-sticky"
)

// TestAdminUIInChromium opens the admin page (/ui) of a live coordhost
// with a token in headless Chromium. A wrong token is refused and shows
// nothing. A classic group of two real kgo
// consumers and a KIP-1071 streams group show up with type, state, epoch
// and member count as the JSON API has them; the streams group's detail
// lists its member's tasks and its rebalance history. The page logs no
// error (console, exceptions, failed loads, policy violations), no
// request URL carries the token, every API request carries it in its
// Authorization header, and a reload reconnects from sessionStorage.
func TestAdminUIInChromium(t *testing.T) {
	b := browsertest.Start(t)
	token := rand.Text()
	cfg, err := config.Load([]string{"--data.dir=" + t.TempDir(), "--kafka.listen=127.0.0.1:0", "--admin.listen=127.0.0.1:0",
		"--admin.token=" + token, "--dataplane.partitions=4", "--groups.defaults.group.initial.rebalance.delay.ms=0",
		"--groups.defaults.streams.initial.rebalance.delay.ms=0", "--groups.defaults.streams.assignment.interval.ms=0",
		// An A/B set-up: half of the streams groups run ha instead of
		// sticky, and each group runs the other one as its shadow (a
		// shadow named as the group's own assignor is skipped).
		"--groups.defaults.streams.assignor.candidate.name=ha", "--groups.defaults.streams.assignor.candidate.percent=50",
		"--groups.defaults.streams.assignor.shadow=sticky,ha"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Plugins.Dir = t.TempDir() // the native builds of the built-in assignors
	ch := started(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const classic, streams, topic = "ui-readers", "ui-counter", "ui-clicks"
	prod, err := kgo.NewClient(kgo.SeedBrokers(ch.KafkaAddr()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("c")}).FirstErr(); err != nil {
		t.Fatal(err) // creates the topic
	}
	for range 2 {
		go newGroupConsumer(t, ch.KafkaAddr(), classic, topic).poll(ctx)
	}
	if _, err := joinStreamsGroup(ctx, prod, streams, topic); err != nil {
		t.Fatal(err)
	}
	admin := "http://" + ch.AdminAddr()
	want := map[string]string{classic: waitGroupRow(t, admin, token, classic, 2), streams: waitGroupRow(t, admin, token, streams, 1)}
	abRows := waitABRows(t, admin, token, streams)

	b.Run(t, 30*time.Second, chromedp.Navigate(admin+"/ui"), chromedp.WaitVisible(chromedp.ID("token")))
	if n := b.NodeCount(t, "#groups tbody tr"); n != 0 {
		t.Fatalf("the page shows %d groups before the token was given", n)
	}
	// A wrong token: refused, the form again, no group shown; the browser
	// logs the 401s, and nothing else.
	b.Run(t, 30*time.Second, chromedp.SendKeys(chromedp.ID("token"), "wrong-"+token), chromedp.Click(chromedp.CSS("#login button")))
	b.WaitText(t, 30*time.Second, "#status", "the admin API refused the token")
	b.Run(t, 30*time.Second, chromedp.WaitVisible(chromedp.ID("token")))
	if n := b.NodeCount(t, "#groups tbody tr"); n != 0 {
		t.Fatalf("the page shows %d groups after a refused token", n)
	}
	refused := b.Errors()
	for _, e := range refused {
		if !strings.Contains(e, "status of 401") {
			t.Errorf("page error after a wrong token: %s", e)
		}
	}
	b.Run(t, 30*time.Second, chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.CSS("#login button")))
	for g, cells := range want {
		b.WaitText(t, 30*time.Second, fmt.Sprintf("#groups tr[data-group=%q]", g), cells)
	}
	b.Run(t, 30*time.Second, chromedp.Click(chromedp.CSS(fmt.Sprintf("#groups tr[data-group=%q]", streams))))
	b.WaitText(t, 30*time.Second, "#detail-summary", "streams group", "1 member")
	b.WaitText(t, 30*time.Second, "#members tbody", "member-1", "process-1", "active: 0_0 0_1 0_2 0_3")
	b.WaitText(t, 30*time.Second, "#history tbody", "member-joined member-1")
	// The A/B comparison: the group's primary and shadow side by side as
	// /v1/ab has them, the totals per assignor and role, and the split,
	// one group short of its 20 per arm.
	b.WaitText(t, 30*time.Second, "#ab-group tbody", abRows...)
	b.WaitText(t, 30*time.Second, "#ab-assignors tbody", "primary", "shadow", "sticky", "ha")
	b.WaitText(t, 30*time.Second, "#ab-split-status", "Split: insufficient data")
	b.WaitText(t, 30*time.Second, "#ab-split tbody", "control", "candidate")

	b.Run(t, 30*time.Second, chromedp.Reload())
	b.WaitText(t, 30*time.Second, fmt.Sprintf("#groups tr[data-group=%q]", classic), want[classic])

	if errs := b.Errors()[len(refused):]; len(errs) > 0 {
		t.Errorf("page errors: %q", errs)
	}
	b.CheckToken(t, token, "/v1/")
}

// waitGroupRow waits (bounded) until the admin API shows group Stable
// with n members and returns the text the page's row of it should have:
// group, type, state, epoch and member count as the API has them.
func waitGroupRow(t *testing.T, admin, token, group string, n int) string {
	t.Helper()
	type desc struct {
		Epoch   *int32
		Members []json.RawMessage
	}
	var d struct {
		Type, State      string
		Classic, Streams *desc
	}
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		req, _ := http.NewRequest("GET", admin+"/v1/groups/"+group, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		d = struct {
			Type, State      string
			Classic, Streams *desc
		}{} // decoding into the last poll's pointers would keep its fields
		err = json.NewDecoder(resp.Body).Decode(&d)
		resp.Body.Close()
		last = fmt.Sprintf("%d %s %v", resp.StatusCode, d.State, err)
		g := d.Classic
		if d.Streams != nil {
			g = d.Streams
		}
		if d.State == "Stable" && g != nil && len(g.Members) == n {
			epoch := "–" // DescribeGroups has no generation
			if g.Epoch != nil {
				epoch = fmt.Sprint(*g.Epoch)
			}
			return fmt.Sprintf("%s%s%s%s%d", group, d.Type, d.State, epoch, len(g.Members))
		}
	}
	t.Fatalf("group %s never Stable with %d members: %s", group, n, last)
	return ""
}

// waitABRows waits (bounded) until GET /v1/ab shows group's primary and
// one shadow, both measured, and returns the text the page's rows of them
// should have: assignor and version, role and arm, epoch, tasks moved (new included)
// and cold hand-overs.
func waitABRows(t *testing.T, admin, token, group string) []string {
	t.Helper()
	type result struct {
		Assignor, Role, Version string
		Epoch                   int32
		Metrics                 *struct {
			Movement struct{ Moved, New, Cold int }
		}
	}
	type ab struct {
		Groups []struct {
			Group, Arm string
			Primary    *result
			Shadows    []*result
		}
	}
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		req, _ := http.NewRequest("GET", admin+"/v1/ab", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got ab // a fresh value each poll: no stale pointers
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		last = fmt.Sprintf("%d %v %+v", resp.StatusCode, err, got)
		for _, g := range got.Groups {
			if g.Group != group || g.Arm == "" || g.Primary == nil || g.Primary.Metrics == nil ||
				len(g.Shadows) != 1 || g.Shadows[0].Metrics == nil {
				continue
			}
			var rows []string
			for _, r := range []*result{g.Primary, g.Shadows[0]} {
				m, name := r.Metrics.Movement, r.Assignor
				if r.Version != "" {
					name += " " + r.Version
				}
				rows = append(rows, fmt.Sprintf("%s%s (%s)%d%d%d", name, r.Role, g.Arm, r.Epoch, m.Moved+m.New, m.Cold))
			}
			return rows
		}
	}
	t.Fatalf("/v1/ab never showed %s's primary and shadow: %s", group, last)
	return nil
}

// TestSimulateReportInChromium: the simulator's HTML report of a
// testdata/sim scenario renders in headless Chromium with its headings,
// tables and charts, and without a page error.
func TestSimulateReportInChromium(t *testing.T) {
	b := browsertest.Start(t)
	data, err := os.ReadFile("testdata/sim/rolling-restart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sim.Decode("rolling-restart.yaml", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := sim.Run(sc, []sim.Assignor{{Name: "sticky", Version: "native", Assign: sticky.Assign}, {Name: "ha", Version: "native", Assign: ha.Assign}})
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, r.HTML(), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Run(t, 30*time.Second, chromedp.Navigate("file://"+file))
	b.WaitText(t, 10*time.Second, "body", "Scenario rolling-restart", "sticky (native): targets", "ha (native): targets")
	if n := b.NodeCount(t, "svg"); n < 2 {
		t.Errorf("%d charts, want 2 or more", n)
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("page errors: %q", errs)
	}
}
