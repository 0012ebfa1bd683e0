package loop

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// TestGroupHandlersFollowTheWireTable: the group coordinator answers
// exactly the keys the wire table sends it (RouteGroup, and RouteSplit
// keys, whose group part it answers), so routing is decided once, in the
// table, and a key added there without a handler fails here.
func TestGroupHandlersFollowTheWireTable(t *testing.T) {
	everything := map[int16]wire.VersionRange{}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		everything[k] = wire.VersionRange{Min: 0, Max: 0x7fff}
	}
	routed := map[kmsg.Key]bool{}
	for _, e := range wire.NewTable(everything).Entries() {
		if e.Route == wire.RouteGroup || e.Route == wire.RouteSplit {
			routed[kmsg.Key(e.Key)] = true
			if groupHandlers[kmsg.Key(e.Key)] == nil {
				t.Errorf("the wire table routes %s to the group coordinator, which has no handler for it", kmsg.NameForKey(e.Key))
			}
		}
	}
	for k := range groupHandlers {
		if !routed[k] {
			t.Errorf("the group coordinator handles %s, which the wire table never routes to it", kmsg.NameForKey(int16(k)))
		}
	}
	if len(routed) < 20 {
		t.Fatalf("the table routed only %d keys to the group coordinator; is it built from every key?", len(routed))
	}
}
