package config

import (
	"fmt"
	"os"
	"strings"

	"github.com/knadh/koanf/maps"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/authz"
)

// EmbeddedUser is one entry of embedded.sasl.users: a SCRAM user of the
// embedded data plane.
type EmbeddedUser struct {
	Mechanism string // SCRAM-SHA-256 or SCRAM-SHA-512
	Name      string
	Password  string
}

// EmbeddedSecurity is the embedded.* section: the embedded data plane's
// users, ACLs and super users (docs/SECURITY.md). With any user, clients
// must authenticate and every request is authorized.
type EmbeddedSecurity struct {
	Users                     []EmbeddedUser
	ACLs                      []authz.ACL
	SuperUsers                []string // principals, User:<name>
	AllowEveryoneIfNoACLFound bool
}

// Enabled reports whether the embedded data plane authenticates and
// authorizes (it has users).
func (e EmbeddedSecurity) Enabled() bool { return len(e.Users) > 0 }

// embeddedListKeys are the embedded.* keys whose values are lists of maps,
// parsed here rather than through the key table.
var embeddedListKeys = []string{"embedded.sasl.users", "embedded.acls"}

// parseEmbeddedUsers reads embedded.sasl.users: entries {user, password
// or password.file, mechanism (optional: both SCRAM mechanisms)}.
func parseEmbeddedUsers(raw any, src string) ([]EmbeddedUser, error) {
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("config: embedded.sasl.users (from %s): must be a list of {user, password or password.file, mechanism} entries", src)
	}
	var out []EmbeddedUser
	seen := map[string]bool{}
	for i, e := range list {
		f, err := entry(e, "embedded.sasl.users", i, "user", "password", "password.file", "mechanism")
		if err != nil {
			return nil, err
		}
		name := f["user"]
		if name == "" {
			return nil, fmt.Errorf("config: embedded.sasl.users[%d].user: a user name is required", i)
		}
		pw := f["password"]
		if file := f["password.file"]; file != "" {
			if pw != "" {
				return nil, fmt.Errorf("config: embedded.sasl.users[%d] (user %q): set password or password.file, not both", i, name)
			}
			b, err := os.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("config: embedded.sasl.users[%d].password.file = %q: %w", i, file, err)
			}
			pw = strings.TrimRight(string(b), "\r\n")
		}
		if pw == "" {
			return nil, fmt.Errorf("config: embedded.sasl.users[%d] (user %q): a password or password.file is required", i, name)
		}
		mechs := []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}
		switch m := f["mechanism"]; m {
		case "":
		case "SCRAM-SHA-256", "SCRAM-SHA-512":
			mechs = []string{m}
		default:
			return nil, fmt.Errorf("config: embedded.sasl.users[%d].mechanism = %q: want SCRAM-SHA-256 or SCRAM-SHA-512", i, m)
		}
		for _, m := range mechs {
			if seen[m+" "+name] {
				return nil, fmt.Errorf("config: embedded.sasl.users[%d]: user %q has %s twice", i, name, m)
			}
			seen[m+" "+name] = true
			out = append(out, EmbeddedUser{Mechanism: m, Name: name, Password: pw})
		}
	}
	return out, nil
}

// parseEmbeddedACLs reads embedded.acls: entries in Kafka's shape
// {principal, resource.type, pattern.type, name, operation, permission,
// host}.
func parseEmbeddedACLs(raw any, src string) ([]authz.ACL, error) {
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("config: embedded.acls (from %s): must be a list of {principal, resource.type, name, operation, permission} entries", src)
	}
	out := make([]authz.ACL, 0, len(list))
	for i, e := range list {
		f, err := entry(e, "embedded.acls", i, "principal", "resource.type", "pattern.type", "name", "operation", "permission", "host")
		if err != nil {
			return nil, err
		}
		a := authz.ACL{Principal: f["principal"], Name: f["name"], Host: f["host"]}
		if a.Host == "" {
			a.Host = "*"
		}
		if a.Host != "*" {
			return nil, fmt.Errorf("config: embedded.acls[%d].host = %q: only * (every host) is supported", i, a.Host)
		}
		bad := func(k, want string) error {
			return fmt.Errorf("config: embedded.acls[%d].%s = %q: want %s", i, k, f[k], want)
		}
		var perr error
		if a.ResourceType, perr = kmsg.ParseACLResourceType(f["resource.type"]); perr != nil || a.ResourceType <= kmsg.ACLResourceTypeAny {
			return nil, bad("resource.type", "topic, group, cluster, transactional_id, delegation_token or user")
		}
		pt := f["pattern.type"]
		if pt == "" {
			pt = "literal"
		}
		if a.Pattern, perr = kmsg.ParseACLResourcePatternType(pt); perr != nil ||
			a.Pattern != kmsg.ACLResourcePatternTypeLiteral && a.Pattern != kmsg.ACLResourcePatternTypePrefixed {
			return nil, bad("pattern.type", "literal or prefixed")
		}
		if a.Operation, perr = kmsg.ParseACLOperation(f["operation"]); perr != nil || a.Operation <= kmsg.ACLOperationAny {
			return nil, bad("operation", "all, read, write, create, delete, alter, describe, cluster_action, describe_configs, alter_configs or idempotent_write")
		}
		switch strings.ToLower(f["permission"]) {
		case "allow":
			a.Allow = true
		case "deny":
		default:
			return nil, bad("permission", "allow or deny")
		}
		out = append(out, a)
	}
	if _, err := authz.NewACLEvaluator(out, nil, false); err != nil {
		return nil, fmt.Errorf("config: embedded.acls: %w", err)
	}
	return out, nil
}

// entry returns the string fields of the i-th entry of list key, refusing
// fields other than allowed.
func entry(e any, key string, i int, allowed ...string) (map[string]string, error) {
	m, ok := e.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("config: %s[%d]: must be a map", key, i)
	}
	flat, _ := maps.Flatten(m, nil, ".")
	out := map[string]string{}
	for k, v := range flat {
		known := false
		for _, a := range allowed {
			known = known || a == k
		}
		if !known {
			return nil, fmt.Errorf("config: %s[%d]: unknown field %q (fields: %s)", key, i, k, strings.Join(allowed, ", "))
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("config: %s[%d].%s = %#v: must be a string", key, i, k, v)
		}
		out[k] = s
	}
	return out, nil
}

// validateEmbedded checks the embedded.* section against the data plane's
// mode: users need the embedded data plane, and ACLs, super users and
// allow.everyone.if.no.acl.found need users (without users nobody is
// authorized, and every client is trusted).
func (c *Config) validateEmbedded() error {
	e := c.Embedded
	if e.Enabled() && !c.DataPlane.Embedded {
		return fmt.Errorf("config: embedded.sasl.users needs dataplane.mode = \"embedded\" (an external cluster keeps its own users)")
	}
	if !e.Enabled() && (len(e.ACLs) > 0 || len(e.SuperUsers) > 0 || e.AllowEveryoneIfNoACLFound) {
		return fmt.Errorf("config: embedded.acls, embedded.super.users and embedded.allow.everyone.if.no.acl.found need embedded.sasl.users (without users the embedded data plane authorizes nothing)")
	}
	if _, err := authz.NewACLEvaluator(e.ACLs, e.SuperUsers, e.AllowEveryoneIfNoACLFound); err != nil {
		return fmt.Errorf("config: embedded: %w", err)
	}
	for _, u := range e.Users {
		if u.Mechanism != "SCRAM-SHA-256" && u.Mechanism != "SCRAM-SHA-512" || u.Name == "" || u.Password == "" {
			return fmt.Errorf("config: embedded.sasl.users: user %q with mechanism %q: a name, a password and SCRAM-SHA-256 or SCRAM-SHA-512 are required", u.Name, u.Mechanism)
		}
	}
	return nil
}
