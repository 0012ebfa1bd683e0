package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/authz"
)

// TestEmbeddedUsersAndACLs: embedded.* parses into users (a password file,
// both SCRAM mechanisms by default) and ACLs in Kafka's shape.
func TestEmbeddedUsersAndACLs(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := load(t, []string{"--config", writeYAML(t, `
embedded:
  super.users: [User:admin]
  allow.everyone.if.no.acl.found: true
  sasl.users:
    - {user: admin, password.file: `+pw+`}
    - {user: app, password: s, mechanism: SCRAM-SHA-512}
  acls:
    - {principal: "User:app", resource.type: transactional_id, pattern.type: prefixed, name: tx-, operation: WRITE, permission: deny}
`)})
	if err != nil {
		t.Fatal(err)
	}
	e := c.Embedded
	want := []EmbeddedUser{{"SCRAM-SHA-256", "admin", "from-file"}, {"SCRAM-SHA-512", "admin", "from-file"}, {"SCRAM-SHA-512", "app", "s"}}
	if len(e.Users) != len(want) || e.Users[0] != want[0] || e.Users[1] != want[1] || e.Users[2] != want[2] {
		t.Errorf("users %+v, want %+v", e.Users, want)
	}
	wantACL := authz.ACL{Principal: "User:app", Host: "*", ResourceType: kmsg.ACLResourceTypeTransactionalId,
		Pattern: kmsg.ACLResourcePatternTypePrefixed, Name: "tx-", Operation: kmsg.ACLOperationWrite}
	if len(e.ACLs) != 1 || e.ACLs[0] != wantACL || !e.AllowEveryoneIfNoACLFound || len(e.SuperUsers) != 1 {
		t.Errorf("embedded %+v", e)
	}
	for _, s := range c.Settings() {
		if strings.Contains(s.Key, "sasl.users") || strings.Contains(s.Key, "embedded.acls") {
			t.Errorf("settings show %s", s.Key)
		}
	}
}

// TestEmbeddedRefusals: each invalid embedded.* configuration names the key.
func TestEmbeddedRefusals(t *testing.T) {
	users := "  sasl.users: [{user: a, password: p}]\n"
	for body, want := range map[string]string{
		"embedded:\n  acls: [{principal: User:a, resource.type: group, name: g, operation: read, permission: allow}]\n":                              "need embedded.sasl.users",
		"embedded:\n" + users + "  acls: [{principal: User:a, resource.type: group, name: g, operation: reed, permission: allow}]\n":                 "embedded.acls[0].operation",
		"embedded:\n" + users + "  acls: [{principal: User:a, resource.type: group, name: g, operation: read, permission: maybe}]\n":                 "embedded.acls[0].permission",
		"embedded:\n" + users + "  acls: [{principal: User:a, resource.type: group, name: g, operation: read, permission: allow, host: 10.0.0.1}]\n": "embedded.acls[0].host",
		"embedded:\n" + users + "  acls: [{principal: User:a, resource.type: group, name: g, operation: read, permission: allow, extra: x}]\n":       `unknown field "extra"`,
		"embedded:\n" + users + "  acls: [{principal: a, resource.type: group, name: g, operation: read, permission: allow}]\n":                      "principal",
		"embedded:\n  sasl.users: [{user: a}]\n":                                 "a password or password.file is required",
		"embedded:\n  sasl.users: [{user: a, password: p, mechanism: PLAIN}]\n":  "embedded.sasl.users[0].mechanism",
		"embedded:\n  sasl.users: [{user: a, password: p, password.file: /x}]\n": "not both",
		"embedded:\n" + users + "  super.users: [admin]\n":                       "super user",
		"dataplane: {mode: external, bootstrap: [k:9092]}\nembedded:\n" + users:  `needs dataplane.mode = "embedded"`,
	} {
		_, err := load(t, []string{"--config", writeYAML(t, body)})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", body, err, want)
		}
	}
}
