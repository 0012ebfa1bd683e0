package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/coordhost/coordhost/host/authz"
)

// Security is the embedded data plane's users and ACLs, from coordhost's
// configuration: clients authenticate with these users (their SASL
// exchange passes through to the embedded cluster, as to an external
// one), and the requests coordhost forwards are authorized by the
// embedded cluster with these ACLs and super users. Group requests are
// authorized by coordhost itself (authz.Local) with the same ACLs.
type Security struct {
	Users      []User
	ACLs       []authz.ACL
	SuperUsers []string // principals, "User:<name>"
}

// User is one SASL user of the embedded data plane.
type User struct {
	Mechanism string // SCRAM-SHA-256 or SCRAM-SHA-512
	Name      string
	Password  string
}

// InternalUser is the embedded data plane's super user that coordhost's
// own connection logs in as, with a random password made at every start;
// no configured user may take the name.
const InternalUser = "__coordhost"

// securityFiles are the embedded cluster's own copies of its users and
// ACLs under DataDir. They are removed before every start: the
// configuration is the only source, so a user or ACL removed from it does
// not come back from the disk, and the internal user's password is the
// one made for this start.
var securityFiles = []string{"sasl.json", "acls.json"}

// securityOpts are the embedded cluster's options for s, and the SASL
// mechanism of coordhost's own connection (the internal super user).
func (s *Security) securityOpts() ([]kfake.Opt, sasl.Mechanism, error) {
	super := map[string]bool{}
	for _, p := range s.SuperUsers {
		super[p] = true
	}
	pw := make([]byte, 32)
	if _, err := rand.Read(pw); err != nil {
		return nil, nil, err
	}
	internal := hex.EncodeToString(pw)
	opts := []kfake.Opt{kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("SCRAM-SHA-512", InternalUser, internal)}
	for _, u := range s.Users {
		if u.Name == InternalUser {
			return nil, nil, fmt.Errorf("user %q: the name is coordhost's own", u.Name)
		}
		switch u.Mechanism {
		case "SCRAM-SHA-256", "SCRAM-SHA-512":
		default:
			return nil, nil, fmt.Errorf("user %q: mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", u.Name, u.Mechanism)
		}
		if super["User:"+u.Name] {
			opts = append(opts, kfake.Superuser(u.Mechanism, u.Name, u.Password))
		} else {
			opts = append(opts, kfake.User(u.Mechanism, u.Name, u.Password))
		}
	}
	return opts, scram.Auth{User: InternalUser, Pass: internal}.AsSha512Mechanism(), nil
}

// removeSecurityFiles removes the embedded cluster's persisted users and
// ACLs (see securityFiles).
func removeSecurityFiles(dir string) error {
	for _, f := range securityFiles {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// createACLs gives the embedded cluster the configured ACLs, as its
// internal super user.
func (d *DataPlane) createACLs(ctx context.Context) error {
	acls := d.cfg.Security.ACLs
	if len(acls) == 0 {
		return nil
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for _, a := range acls {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = a.ResourceType, a.Name, a.Pattern
		c.Principal, c.Host, c.Operation = a.Principal, a.Host, a.Operation
		c.PermissionType = kmsg.ACLPermissionTypeDeny
		if a.Allow {
			c.PermissionType = kmsg.ACLPermissionTypeAllow
		}
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(ctx, d.admin)
	if err != nil {
		return fmt.Errorf("gateway: creating the embedded data plane's ACLs: %w", err)
	}
	for i, r := range resp.Results {
		if r.ErrorCode != 0 {
			return fmt.Errorf("gateway: embedded ACL %s: %w", acls[i], kerr.ErrorForCode(r.ErrorCode))
		}
	}
	return nil
}

// securityFromConfigOnly answers the requests that would change the
// embedded cluster's ACLs or users when they come from the configuration
// (nil for any other request): SECURITY_DISABLED, with a message naming
// the keys.
func securityFromConfigOnly(req kmsg.Request) kmsg.Response {
	code := kerr.SecurityDisabled.Code
	msg := kmsg.StringPtr("the embedded data plane's ACLs and users come from coordhost's configuration (embedded.acls, embedded.sasl.users)")
	switch r := req.(type) {
	case *kmsg.CreateACLsRequest:
		resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
		for range r.Creations {
			resp.Results = append(resp.Results, kmsg.CreateACLsResponseResult{ErrorCode: code, ErrorMessage: msg})
		}
		return resp
	case *kmsg.DeleteACLsRequest:
		resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
		for range r.Filters {
			resp.Results = append(resp.Results, kmsg.DeleteACLsResponseResult{ErrorCode: code, ErrorMessage: msg})
		}
		return resp
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		seen := map[string]bool{}
		for _, u := range r.Deletions {
			seen[u.Name] = true
		}
		for _, u := range r.Upsertions {
			seen[u.Name] = true
		}
		for u := range seen {
			resp.Results = append(resp.Results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: u, ErrorCode: code, ErrorMessage: msg})
		}
		return resp
	}
	return nil
}
