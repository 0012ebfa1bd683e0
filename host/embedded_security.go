package host

import (
	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/gateway"
)

// embeddedSecurity is the embedded data plane's users and ACLs from the
// configuration; nil without users (the embedded data plane then
// authenticates and authorizes nothing).
func embeddedSecurity(e config.EmbeddedSecurity) *gateway.Security {
	if !e.Enabled() {
		return nil
	}
	sec := &gateway.Security{ACLs: e.ACLs, SuperUsers: e.SuperUsers}
	for _, u := range e.Users {
		sec.Users = append(sec.Users, gateway.User{Mechanism: u.Mechanism, Name: u.Name, Password: u.Password})
	}
	return sec
}

// embeddedAuthz authorizes group requests with the embedded data plane's
// ACLs, in coordhost (docs/SECURITY.md): every connection authenticates
// first, as on a Kafka SASL listener.
func embeddedAuthz(l GroupCoordinator, cfg *config.Config, s *Server) (*authz.Coordinator, error) {
	e := cfg.Embedded
	ev, err := authz.NewACLEvaluator(e.ACLs, e.SuperUsers, e.AllowEveryoneIfNoACLFound)
	if err != nil {
		return nil, err
	}
	return authz.New(l, authz.Config{RequireAuth: true, Log: s.log.With("component", "authz"),
		Local: &authz.Local{Evaluator: ev, TopicNames: s.dp.TopicNames}}), nil
}
