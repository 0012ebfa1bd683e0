// Package browsertest drives a headless Chromium from Go tests
// (github.com/chromedp/chromedp) and records what a page did: console
// errors, uncaught exceptions, error log entries (failed loads, Content
// Security Policy violations) and every request the browser made. A
// missing chromium skips the test, or fails it under CI=true.
package browsertest

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/coordhost/coordhost/internal/testtool"
)

// Browser is one headless Chromium with one tab, closed when the test ends.
type Browser struct {
	ctx context.Context

	mu       sync.Mutex
	errors   []string
	requests []Request
}

// Request is one request the browser sent.
type Request struct {
	URL     string // with the fragment, if any
	Headers map[string]string
}

// Start launches Chromium with a fresh profile, the flags that work as
// root on a machine without network, and no background traffic.
func Start(tb testing.TB) *Browser {
	tb.Helper()
	path := chromium(tb)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &Browser{}
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(b.record))
	b.ctx = ctx
	tb.Cleanup(func() { cancelTab(); cancelAlloc() })
	// The first action launches the browser and opens the tab, which lives
	// as long as that action's context: ctx itself, bounded by a timer.
	bound := time.AfterFunc(time.Minute, cancelTab)
	defer bound.Stop()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		tb.Fatalf("start %s: %v", path, err)
	}
	return b
}

// chromium is the browser's path: chromium (Debian), chromium-browser or
// google-chrome.
func chromium(tb testing.TB) string {
	tb.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testtool.Missing(tb, "chromium not found on PATH (apt-get install chromium)")
	return ""
}

func (b *Browser) record(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, remoteText(a))
			}
			b.errors = append(b.errors, "console."+string(ev.Type)+": "+strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.errors = append(b.errors, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
	case *cdplog.EventEntryAdded:
		if e := ev.Entry; e.Level == cdplog.EntryLevelError {
			b.errors = append(b.errors, fmt.Sprintf("log (%s) %s: %s", e.Source, e.URL, e.Text))
		}
	case *network.EventRequestWillBeSent:
		r := Request{URL: ev.Request.URL + ev.Request.URLFragment, Headers: map[string]string{}}
		for k, v := range ev.Request.Headers {
			r.Headers[k] = fmt.Sprint(v)
		}
		b.requests = append(b.requests, r)
	}
}

func remoteText(o *runtime.RemoteObject) string {
	if o.Description != "" {
		return o.Description
	}
	return string(o.Value)
}

// Run runs actions in the tab, bounded by d; an error fails the test with
// what the page reported so far.
func (b *Browser) Run(tb testing.TB, d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.Fatalf("browser: %v\npage errors: %q", err, b.Errors())
	}
}

// WaitText waits (bounded by d) until the text of the first element
// matching the CSS selector sel contains every string of want, and
// returns that text.
func (b *Browser) WaitText(tb testing.TB, d time.Duration, sel string, want ...string) string {
	tb.Helper()
	return b.WaitFunc(tb, d, sel, fmt.Sprintf("%q", want), func(s string) bool { return containsAll(s, want) })
}

func containsAll(s string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// Errors are the console errors, uncaught exceptions and error log
// entries seen so far.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// Requests are the requests the browser sent so far.
func (b *Browser) Requests() []Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Request(nil), b.requests...)
}

// NodeCount is how many elements match the CSS selector sel now.
func (b *Browser) NodeCount(tb testing.TB, sel string) int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(sel), chromedp.AtLeast(0)))
	if err != nil {
		tb.Fatalf("%s: %v", sel, err)
	}
	return len(nodes)
}

// CheckToken fails the test when a request URL (fragment included) has
// token, when a request to path prefix api has no bearer Authorization
// header, or when none carried token there.
func (b *Browser) CheckToken(tb testing.TB, token, api string) {
	tb.Helper()
	carried := false
	for _, r := range b.Requests() {
		if strings.Contains(r.URL, token) {
			tb.Errorf("request URL carries the token: %s", r.URL)
		}
		if strings.Contains(r.URL, api) {
			auth := r.Headers["Authorization"]
			if !strings.HasPrefix(auth, "Bearer ") {
				tb.Errorf("%s without a bearer Authorization header: %v", r.URL, r.Headers)
			}
			carried = carried || auth == "Bearer "+token
		}
	}
	if !carried {
		tb.Errorf("no request to %s carried the token in its Authorization header", api)
	}
}

// WaitFunc waits (bounded by d) until ok holds for the text of the first
// element matching the CSS selector sel, and returns that text; what
// describes ok in the failure.
func (b *Browser) WaitFunc(tb testing.TB, d time.Duration, sel, what string, ok func(string) bool) string {
	tb.Helper()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		text, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
		cancel()
		if err == nil && ok(text) {
			return text
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: want %s, have %q (err %v)\npage errors: %q", sel, what, text, err, b.Errors())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
