package host

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/authz"
)

// cutOver lists the external cluster's groups at start, over coordhost's
// own connection, and holds the member requests of those its own group
// coordinator still runs until they are empty there (authz.CutOver;
// docs/RELIABILITY.md).
func cutOver(ctx context.Context, s *Server) (*authz.CutOver, error) {
	ask := func(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
		return s.dp.Admin().Request(ctx, req)
	}
	co, err := authz.NewCutOver(ctx, ask, s.log.With("component", "cutover"), authz.CutOverInterval, nil)
	if err != nil {
		return nil, fmt.Errorf("cut-over from the cluster's own group coordinator: %w", err)
	}
	return co, nil
}
