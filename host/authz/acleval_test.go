package authz

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestACLEvaluatorKafkaRules: each rule of Kafka 4.4's StandardAuthorizer
// (StandardAuthorizerData.findResult and MatchingRuleBuilder).
func TestACLEvaluatorKafkaRules(t *testing.T) {
	const (
		g, tp, cl, tx = kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeCluster, kmsg.ACLResourceTypeTransactionalId
		lit, pre      = kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
		read, write   = kmsg.ACLOperationRead, kmsg.ACLOperationWrite
		desc, del     = kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete
		alter, all    = kmsg.ACLOperationAlter, kmsg.ACLOperationAll
		dconf, aconf  = kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs
		create        = kmsg.ACLOperationCreate
	)
	acls := []ACL{
		{"User:exact", "*", g, lit, "g", read, true},
		{"User:exact", "*", tp, lit, "t", write, true},
		{"User:pre", "*", g, pre, "app-", del, true},
		{"User:pre", "*", tp, pre, "*", read, true}, // a prefixed "*" is no wildcard
		{"User:deny", "*", g, lit, "g", all, true},
		{"User:deny", "*", g, lit, "g", read, false},
		{"User:deny", "*", g, lit, "g", desc, false}, // a DENY implies nothing, matches its own op
		{"User:*", "*", g, lit, "gw", read, true},
		{"User:wild", "*", tp, lit, "*", alter, true},
		{"User:wild", "*", tp, lit, "secret", alter, false},
		{"User:conf", "*", g, lit, "g", aconf, true},
		{"User:host", "10.0.0.1", g, lit, "g", read, true},
		{"User:cl", "*", cl, lit, "kafka-cluster", create, true},
		{"User:denyall", "*", tx, pre, "tx", all, false},
		{"User:denyall", "*", tx, lit, "tx1", write, true},
	}
	e, err := NewACLEvaluator(acls, []string{"User:admin"}, false)
	if err != nil {
		t.Fatal(err)
	}
	open, err := NewACLEvaluator(acls, []string{"User:admin"}, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		principal string
		host      string
		op        kmsg.ACLOperation
		rt        kmsg.ACLResourceType
		res       string
		want      Decision
		wantOpen  Decision // with allow.everyone.if.no.acl.found
	}{
		{"super user", "User:admin", "1.2.3.4", alter, cl, "kafka-cluster", Allowed, Allowed},
		{"exact literal", "User:exact", "h", read, g, "g", Allowed, Allowed},
		{"literal is not prefix", "User:exact", "h", read, g, "g2", Denied, Allowed},
		{"READ implies DESCRIBE", "User:exact", "h", desc, g, "g", Allowed, Allowed},
		{"WRITE implies DESCRIBE", "User:exact", "h", desc, tp, "t", Allowed, Allowed},
		{"WRITE is not READ", "User:exact", "h", read, tp, "t", Denied, Denied},
		{"prefixed", "User:pre", "h", del, g, "app-1", Allowed, Allowed},
		{"DELETE implies DESCRIBE", "User:pre", "h", desc, g, "app-1", Allowed, Allowed},
		{"prefix not matching", "User:pre", "h", del, g, "ap", Denied, Allowed},
		{"prefixed * is a literal prefix", "User:pre", "h", read, tp, "orders", Denied, Denied},
		{"DENY over ALLOW", "User:deny", "h", read, g, "g", Denied, Denied},
		{"ALL allows the others", "User:deny", "h", del, g, "g", Allowed, Allowed},
		{"explicit DENY of DESCRIBE", "User:deny", "h", desc, g, "g", Denied, Denied},
		{"User:* principal", "User:anyone", "h", read, g, "gw", Allowed, Allowed},
		{"User:* READ implies DESCRIBE", "User:anyone", "h", desc, g, "gw", Allowed, Allowed},
		{"resource with ACLs, none for the principal", "User:anyone", "h", read, g, "g", Denied, Denied},
		{"no ACL on the resource", "User:anyone", "h", read, g, "nothing", Denied, Allowed},
		{"wildcard resource name", "User:wild", "h", alter, tp, "orders", Allowed, Allowed},
		{"DENY on a name over a wildcard ALLOW", "User:wild", "h", alter, tp, "secret", Denied, Denied},
		{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", "User:conf", "h", dconf, g, "g", Allowed, Allowed},
		{"ALTER_CONFIGS does not imply DESCRIBE", "User:conf", "h", desc, g, "g", Denied, Denied},
		{"host matches", "User:host", "10.0.0.1", read, g, "g", Allowed, Allowed},
		{"host does not match", "User:host", "10.0.0.2", read, g, "g", Denied, Denied},
		{"cluster", "User:cl", "h", create, cl, "kafka-cluster", Allowed, Allowed},
		{"prefixed DENY ALL over literal ALLOW", "User:denyall", "h", write, tx, "tx1", Denied, Denied},
		{"other resource type; a wildcard ACL counts as the resource's", "User:exact", "h", read, tp, "g", Denied, Denied},
	} {
		if got := e.Evaluate(c.principal, c.host, c.op, c.rt, c.res); got != c.want {
			t.Errorf("%s: %s %v on %v %q = %v, want %v", c.name, c.principal, c.op, c.rt, c.res, got, c.want)
		}
		if got := open.Evaluate(c.principal, c.host, c.op, c.rt, c.res); got != c.wantOpen {
			t.Errorf("%s (allow.everyone.if.no.acl.found): %s %v on %v %q = %v, want %v", c.name, c.principal, c.op, c.rt, c.res, got, c.wantOpen)
		}
	}
}

// TestACLEvaluatorRefusesInvalid: what Kafka's CreateAcls would refuse.
func TestACLEvaluatorRefusesInvalid(t *testing.T) {
	ok := ACL{"User:a", "*", kmsg.ACLResourceTypeGroup, kmsg.ACLResourcePatternTypeLiteral, "g", kmsg.ACLOperationRead, true}
	for name, mut := range map[string]func(*ACL){
		"no principal type": func(a *ACL) { a.Principal = "a" },
		"empty host":        func(a *ACL) { a.Host = "" },
		"empty name":        func(a *ACL) { a.Name = "" },
		"pattern MATCH":     func(a *ACL) { a.Pattern = kmsg.ACLResourcePatternTypeMatch },
		"operation ANY":     func(a *ACL) { a.Operation = kmsg.ACLOperationAny },
		"resource ANY":      func(a *ACL) { a.ResourceType = kmsg.ACLResourceTypeAny },
		"cluster name":      func(a *ACL) { a.ResourceType, a.Name = kmsg.ACLResourceTypeCluster, "other" },
	} {
		a := ok
		mut(&a)
		if _, err := NewACLEvaluator([]ACL{a}, nil, false); err == nil {
			t.Errorf("%s: accepted %s", name, a)
		}
	}
	if _, err := NewACLEvaluator([]ACL{ok}, []string{"admin"}, false); err == nil {
		t.Error("a super user without a principal type was accepted")
	}
	if _, err := NewACLEvaluator([]ACL{ok}, []string{"User:admin"}, false); err != nil {
		t.Error(err)
	}
}
