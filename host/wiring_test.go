package host_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/config"
)

func wiringConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Load([]string{"--data.dir=" + t.TempDir(), "--kafka.listen=127.0.0.1:0", "--admin.listen=127.0.0.1:0",
		"--plugins.dir=" + t.TempDir()}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestWiringMountsAdminRoutes: the admin routes come from what the
// coordinator factory returned (no write-back into the server's options),
// and an in-process assignor is listed beside the built-in ones.
func TestWiringMountsAdminRoutes(t *testing.T) {
	cfg := wiringConfig(t)
	first := func(req *abi.AssignRequest) (*abi.AssignResponse, error) { return nil, nil }
	srv, err := host.Start(timeout(t), host.Options{Config: cfg,
		Coordinator: host.NewCoordinatorWith(map[string]assign.Native{"first": first})})
	if err != nil {
		t.Fatal(err)
	}
	defer stopHost(t, srv)
	get := func(path string) (int, string) {
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + srv.AdminAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/v1/plugins"); code != 200 || !strings.Contains(body, `"name": "first"`) || !strings.Contains(body, `"name": "sticky"`) {
		t.Fatalf("/v1/plugins: %d %s", code, body)
	}
	if code, body := get("/v1/groups"); code != 200 {
		t.Fatalf("/v1/groups: %d %s", code, body)
	}
	stopHost(t, srv) // a second Shutdown (the deferred one) returns the first's result
}

// TestWiringRefusesTakenAssignorName: an in-process assignor cannot shadow
// a built-in one; start fails and says why.
func TestWiringRefusesTakenAssignorName(t *testing.T) {
	cfg := wiringConfig(t)
	mine := func(req *abi.AssignRequest) (*abi.AssignResponse, error) { return nil, nil }
	srv, err := host.Start(timeout(t), host.Options{Config: cfg,
		Coordinator: host.NewCoordinatorWith(map[string]assign.Native{"sticky": mine})})
	if err == nil {
		stopHost(t, srv)
		t.Fatal("start succeeded with an in-process assignor named sticky")
	}
	if !strings.Contains(err.Error(), `in-process assignor "sticky": the name is taken`) {
		t.Fatalf("error: %v", err)
	}
}
