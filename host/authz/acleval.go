package authz

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACL is one ACL binding in Kafka's shape (what kafka-acls.sh creates).
type ACL struct {
	Principal    string // "User:<name>", or "User:*" for every principal
	Host         string // "*" or a client address
	ResourceType kmsg.ACLResourceType
	Pattern      kmsg.ACLResourcePatternType // literal (name "*" matches every name) or prefixed
	Name         string
	Operation    kmsg.ACLOperation // ALL matches every operation
	Allow        bool              // false: DENY
}

// Decision is an authorizer's answer.
type Decision bool

// Allowed and Denied are the two decisions.
const (
	Allowed Decision = true
	Denied  Decision = false
)

// ACLEvaluator decides as Kafka 4.4's StandardAuthorizer does over a fixed
// set of ACLs: super users are allowed everything; a matching DENY wins
// over any ALLOW; an ALLOW of READ, WRITE, DELETE or ALTER implies
// DESCRIBE and one of ALTER_CONFIGS implies DESCRIBE_CONFIGS (a DENY
// implies nothing); a resource with no ACL at all (for any principal) is
// allowed only with allow.everyone.if.no.acl.found.
type ACLEvaluator struct {
	acls          []ACL
	super         map[string]bool
	allowEveryone bool
}

// NewACLEvaluator validates acls and returns their evaluator.
func NewACLEvaluator(acls []ACL, superUsers []string, allowEveryoneIfNoACLFound bool) (*ACLEvaluator, error) {
	e := &ACLEvaluator{acls: append([]ACL(nil), acls...), super: map[string]bool{}, allowEveryone: allowEveryoneIfNoACLFound}
	for _, p := range superUsers {
		if err := checkPrincipal(p); err != nil {
			return nil, fmt.Errorf("super user %q: %w", p, err)
		}
		e.super[p] = true
	}
	for i, a := range e.acls {
		if err := a.validate(); err != nil {
			return nil, fmt.Errorf("ACL %d (%s): %w", i, a, err)
		}
	}
	return e, nil
}

func checkPrincipal(p string) error {
	typ, name, ok := strings.Cut(p, ":")
	if !ok || typ == "" || name == "" {
		return fmt.Errorf("a principal is <type>:<name>, e.g. User:alice")
	}
	return nil
}

func (a ACL) validate() error {
	if err := checkPrincipal(a.Principal); err != nil {
		return err
	}
	switch {
	case a.Host == "":
		return fmt.Errorf("empty host (write * for every host)")
	case a.Name == "":
		return fmt.Errorf("empty resource name")
	case a.Pattern != kmsg.ACLResourcePatternTypeLiteral && a.Pattern != kmsg.ACLResourcePatternTypePrefixed:
		return fmt.Errorf("pattern type %v: want LITERAL or PREFIXED", a.Pattern)
	}
	switch a.ResourceType {
	case kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster,
		kmsg.ACLResourceTypeTransactionalId, kmsg.ACLResourceTypeDelegationToken, kmsg.ACLResourceTypeUser:
	default:
		return fmt.Errorf("resource type %v", a.ResourceType)
	}
	if a.ResourceType == kmsg.ACLResourceTypeCluster && a.Name != "kafka-cluster" && !(a.Pattern == kmsg.ACLResourcePatternTypeLiteral && a.Name == "*") {
		return fmt.Errorf("a CLUSTER ACL names kafka-cluster")
	}
	switch a.Operation {
	case kmsg.ACLOperationUnknown, kmsg.ACLOperationAny:
		return fmt.Errorf("operation %v", a.Operation)
	}
	if a.Operation.String() == "" {
		return fmt.Errorf("operation %d", int8(a.Operation))
	}
	return nil
}

func (a ACL) String() string {
	perm := "DENY"
	if a.Allow {
		perm = "ALLOW"
	}
	return fmt.Sprintf("%s %s %s on %s %s %q from %s", a.Principal, perm, a.Operation, a.Pattern, a.ResourceType, a.Name, a.Host)
}

// Evaluate decides whether principal, connected from host, may perform op
// on the resource of type rt named name.
func (e *ACLEvaluator) Evaluate(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) Decision {
	if e.super[principal] {
		return Allowed
	}
	var resourceHasACLs, allowed bool
	for i := range e.acls {
		a := &e.acls[i]
		if a.ResourceType != rt || !a.matchesName(name) {
			continue
		}
		resourceHasACLs = true
		if a.Principal != principal && a.Principal != "User:*" || a.Host != "*" && a.Host != host || !a.grants(op) {
			continue
		}
		if !a.Allow {
			return Denied
		}
		allowed = true
	}
	if allowed || !resourceHasACLs && e.allowEveryone {
		return Allowed
	}
	return Denied
}

func (a *ACL) matchesName(name string) bool {
	if a.Pattern == kmsg.ACLResourcePatternTypePrefixed {
		return strings.HasPrefix(name, a.Name)
	}
	return a.Name == name || a.Name == "*"
}

// grants reports whether the ACL's operation covers op: ALL covers every
// operation; an ALLOW also covers the operations its own implies.
func (a *ACL) grants(op kmsg.ACLOperation) bool {
	if a.Operation == kmsg.ACLOperationAll || a.Operation == op {
		return true
	}
	if !a.Allow {
		return false
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		switch a.Operation {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return a.Operation == kmsg.ACLOperationAlterConfigs
	}
	return false
}
