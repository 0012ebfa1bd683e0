package host_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/coordhost/coordhost/host/runtime"
)

// TestHistoryOfGroupsOnEveryPartition: GET /v1/groups/{id}/history finds a
// group on whichever runtime partition it lives (an empty history until
// the group's first target), and answers 404 for a group that does not
// exist.
func TestHistoryOfGroupsOnEveryPartition(t *testing.T) {
	path := filepath.Join(t.TempDir(), "coordhost.db")
	groups := []string{"orders", "payments", "polygenelubricants", "app-7", "app-8", "zeta"}
	writeOldStore(t, path, groups)
	parts := map[int]bool{}
	for _, g := range groups {
		parts[runtime.PartitionFor(g, runtime.DefaultPartitions)] = true
	}
	if len(parts) < 4 {
		t.Fatalf("the groups share too few partitions (%d) to test routing", len(parts))
	}
	l, st, err := startPartitioned(t, path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	defer l.Shutdown(context.Background())
	mux := http.NewServeMux()
	mux.Handle("GET /v1/groups/{id}/history", l.GroupsHandler())
	for _, g := range append(groups, "missing") {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/groups/"+g+"/history", nil))
		want := http.StatusOK
		if g == "missing" {
			want = http.StatusNotFound
		}
		if rec.Code != want {
			t.Errorf("history of %s (partition %d): %d %s, want %d", g,
				runtime.PartitionFor(g, runtime.DefaultPartitions), rec.Code, rec.Body, want)
		}
	}
}
