package sticky_test

import (
	"testing"

	"github.com/coordhost/coordhost/abi/abitest"
	sticky "github.com/coordhost/coordhost/plugins/assignor-sticky"
)

func TestConformance(t *testing.T) {
	for _, r := range abitest.Run(sticky.Assign, abitest.Cases(testing.Short())) {
		if r.Err != nil {
			t.Errorf("%s: %v", r.Case, r.Err)
			continue
		}
		t.Logf("%s: %v", r.Case, r.Figures)
	}
}
