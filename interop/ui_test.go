package interop

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/coordhost/coordhost/internal/browsertest"
)

// TestInteropUI opens coordhost's admin page (/ui, with admin.token) in
// headless Chromium while two instances of the real Kafka Streams 4.4 app
// run the streams protocol against it: the streams group shows up Stable
// with both members, and its detail lists each instance's members with
// their tasks and the rebalance history. Then it renders an HTML report
// of `coordhost simulate`. Neither page logs an error, and no request URL
// carries the token.
func TestInteropUI(t *testing.T) {
	needInterop(t)
	b := browsertest.Start(t)
	dir := logDir(t)
	token := rand.Text()
	admin := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	c := startCoordhost(t, dir, "", "--admin.listen="+admin, "--admin.token="+token)

	const group = "interop-ui"
	tp := topicsOf(group)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createTopics(t, cl, inputPartitions, tp.in, tp.out)
	f := newFleet(t, dir, c.addr, group, 2, tp)
	f.startAll("streams", 0)
	defer f.stopAll()
	if err := f.waitRunning(startBound); err != nil {
		t.Fatalf("%v\n%s", err, c.proc.tail(60))
	}

	b.Run(t, 30*time.Second, chromedp.Navigate("http://"+admin+"/ui"),
		chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.CSS("#login button")))
	row := fmt.Sprintf("#groups tr[data-group=%q]", group)
	b.WaitText(t, startBound, row+" td:nth-child(2)", "streams")
	b.WaitFunc(t, startBound, row+" td:nth-child(5)", "2 members", func(s string) bool { return s == "2" })
	b.WaitFunc(t, startBound, row+" td:nth-child(3)", "Stable", func(s string) bool { return s == "Stable" })
	b.Run(t, 30*time.Second, chromedp.Click(chromedp.CSS(row)))
	b.WaitText(t, 30*time.Second, "#detail-summary", "streams group", "2 members")
	b.WaitText(t, 30*time.Second, "#members tbody", "app0-streams-0", "app1-streams-0", "active: ")
	b.WaitText(t, 30*time.Second, "#history tbody", "member-joined")
	// The A/B section: the group's own assignor as the primary, no shadow
	// and no split configured.
	b.WaitText(t, 30*time.Second, "#ab-group tbody", "primary")
	b.WaitText(t, 30*time.Second, "#ab-assignors tbody", "primary")
	b.WaitText(t, 30*time.Second, "#ab-split-status", "No group is split.")

	report := filepath.Join(t.TempDir(), "simulate.html")
	out, err := exec.Command(coordhostBinary(t), "simulate", "--scenario", "../testdata/sim/scale-out.yaml",
		"--assignor", "sticky", "--assignor", "ha", "--html", report).CombinedOutput()
	if err != nil {
		t.Fatalf("coordhost simulate: %v\n%s", err, out)
	}
	if _, err := os.Stat(report); err != nil {
		t.Fatal(err)
	}
	b.Run(t, 30*time.Second, chromedp.Navigate("file://"+report))
	b.WaitText(t, 10*time.Second, "body", "Scenario scale-out", "sticky (", "ha (", "Tasks without a caught-up active")

	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("page errors: %q", errs)
	}
	b.CheckToken(t, token, "/v1/")
}
