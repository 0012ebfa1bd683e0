package interop

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/wire"
	"github.com/coordhost/coordhost/internal/testtool"
)

// The secured broker: a SASL_PLAINTEXT listener (SCRAM-SHA-256/512, unsecured OAUTHBEARER) for
// the principals under test, StandardAuthorizer, and a PLAINTEXT listener
// whose ANONYMOUS principal is a super user (the controller link, and the
// suite's admin that creates ACLs and reads offsets).
const adminPassword = "admin-secret"

var authzUsers = []string{"admin", "noacl", "exact", "prefixed", "denyover", appUser, "opsuser", "rouser", offsetsUser}

func startSecureBroker(t *testing.T, logDir string) (plain, secure string) {
	t.Helper()
	return startSecureBrokerWith(t, appDir, logDir, nil)
}

// startSecureBrokerSSL is startSecureBroker with an SSL listener too,
// requiring client certificates of pki (the principal is the subject's
// DN, Kafka's default ssl.principal.mapping.rules).
func startSecureBrokerSSL(t *testing.T, logDir string, pki *testtool.PKI) (plain, secure, ssl string) {
	t.Helper()
	sport := freePort(t)
	ssl = fmt.Sprintf("127.0.0.1:%d", sport)
	dir := t.TempDir()
	plain, secure = startSecureBrokerWith(t, appDir, logDir, map[string]string{
		"listeners+":                        ",SSL://" + ssl,
		"advertised.listeners+":             ",SSL://" + ssl,
		"listener.security.protocol.map+":   ",SSL:SSL",
		"listener.name.ssl.ssl.client.auth": "required",
		"ssl.keystore.type":                 "PEM",
		"ssl.keystore.location":             pemKeystore(t, dir, pki.Issue(t, pkix.Name{CommonName: "broker"})),
		"ssl.truststore.type":               "PEM",
		"ssl.truststore.location":           pki.WriteCA(t, dir),
	})
	return plain, secure, ssl
}

// pemKeystore writes cert's PKCS#8 key and certificate into one file, as
// Kafka's PEM keystore reads it.
func pemKeystore(t *testing.T, dir string, cert tls.Certificate) string {
	t.Helper()
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key})
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})...)
	path := filepath.Join(dir, "broker-keystore.pem")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startSecureBrokerWith is startSecureBroker with the broker's classpath
// from project and authorizer settings overriding the StandardAuthorizer
// ones.
func startSecureBrokerWith(t *testing.T, project, logDir string, authorizer map[string]string) (plain, secure string) {
	t.Helper()
	port, sport := freePort(t), freePort(t)
	jaas := "org.apache.kafka.common.security.scram.ScramLoginModule required;"
	props := map[string]string{
		"listeners":                      fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d", port, sport),
		"advertised.listeners":           fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d", port, sport),
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":        "SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		// unsecured OAUTHBEARER (tests only): the broker's default validator
		// accepts an unsigned JWT and takes the principal from its sub claim
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":   "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": jaas,
		"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": jaas,
		// KIP-368: OAUTHBEARER sessions last at most brokerReauth (authz_reauth_test.go)
		"listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms": fmt.Sprint(brokerReauth.Milliseconds()),
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":           "User:ANONYMOUS;User:admin",
		// delegation tokens (KIP-48): coordhost writes offsets as each
		// client's principal by default (dataplane.offsets.identity=client)
		// and logs client certificates in with them
		"delegation.token.secret.key": "interop-delegation-token-secret",
	}
	for k, v := range authorizer {
		if base, ok := strings.CutSuffix(k, "+"); ok { // appended to the value above
			props[base] += v
			continue
		}
		props[k] = v
	}
	var format []string
	for _, u := range authzUsers {
		for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
			format = append(format, "--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", mech, u, password(u)))
		}
	}
	b := launchBrokerFrom(t, project, logDir, port, props, format...)
	return b.addr, fmt.Sprintf("127.0.0.1:%d", sport)
}

func password(user string) string {
	if user == "admin" {
		return adminPassword
	}
	return user + "-secret"
}

// acl is one ACL binding the test creates.
type acl struct {
	principal string
	rt        kmsg.ACLResourceType
	name      string
	pattern   kmsg.ACLResourcePatternType
	op        kmsg.ACLOperation
	perm      kmsg.ACLPermissionType
}

var (
	allow, deny       = kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny
	literal, prefixed = kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	rGroup, rTopic    = kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeTopic
	rTxn, rCluster    = kmsg.ACLResourceTypeTransactionalId, kmsg.ACLResourceTypeCluster
)

// authzACLs: exact literal grants, prefixed grants, a DENY over an ALLOW,
// and a wildcard principal on its own group.
var authzACLs = []acl{
	{"User:exact", rGroup, "g", literal, kmsg.ACLOperationRead, allow},
	{"User:exact", rTopic, "t", literal, kmsg.ACLOperationRead, allow},
	{"User:exact", rTxn, "tx", literal, kmsg.ACLOperationWrite, allow},
	{"User:prefixed", rGroup, "g", prefixed, kmsg.ACLOperationDescribe, allow},
	{"User:prefixed", rGroup, "g", prefixed, kmsg.ACLOperationDelete, allow},
	{"User:prefixed", rGroup, "g", prefixed, kmsg.ACLOperationDescribeConfigs, allow},
	{"User:prefixed", rTopic, "t", prefixed, kmsg.ACLOperationDescribe, allow},
	{"User:prefixed", rCluster, "kafka-cluster", literal, kmsg.ACLOperationDescribeConfigs, allow},
	{"User:denyover", rGroup, "g", literal, kmsg.ACLOperationAll, allow},
	{"User:denyover", rGroup, "g", literal, kmsg.ACLOperationRead, deny},
	{"User:denyover", rTopic, "t", literal, kmsg.ACLOperationAll, allow},
	{"User:denyover", rTxn, "tx", literal, kmsg.ACLOperationAll, allow},
	{"User:*", rGroup, "gw", literal, kmsg.ACLOperationRead, allow},
}

func createACLs(t *testing.T, cl *kgo.Client, acls []acl) {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, a := range acls {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = a.rt, a.name, a.pattern
		c.Principal, c.Host, c.Operation, c.PermissionType = a.principal, "*", a.op, a.perm
		req.Creations = append(req.Creations, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.Results {
		if r.ErrorCode != 0 {
			t.Fatalf("CreateACLs %+v: %v", acls[i], kerr.ErrorForCode(r.ErrorCode))
		}
	}
	// the controller answered; the broker's authorizer applies the ACLs
	// from the metadata log a moment later, and lists them once it has
	for _, a := range acls {
		for deadline := time.Now().Add(10 * time.Second); !aclListed(ctx, t, cl, a); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the broker does not list the ACL %+v 10s after creating it", a)
			}
		}
	}
}

// aclListed says whether the broker lists a.
func aclListed(ctx context.Context, t *testing.T, cl *kgo.Client, a acl) bool {
	t.Helper()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourceName, req.ResourcePatternType = a.rt, kmsg.StringPtr(a.name), a.pattern
	req.Principal, req.Host, req.Operation, req.PermissionType = kmsg.StringPtr(a.principal), kmsg.StringPtr("*"), a.op, a.perm
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.ErrorCode == 0 && len(resp.Resources) > 0 && len(resp.Resources[0].ACLs) > 0
}

// rawConn is one client connection with exact request versions, so the
// same bytes go to the broker and to coordhost.
type rawConn struct {
	nc   net.Conn
	br   *bufio.Reader
	corr int32
	// lifetime is the session lifetime the last accepted login was told.
	lifetime time.Duration
}

func dialKafka(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{nc: nc, br: bufio.NewReader(nc)}
}

func (c *rawConn) do(req kmsg.Request) (kmsg.Response, error) {
	c.corr++
	c.nc.SetDeadline(time.Now().Add(20 * time.Second))
	buf := kmsg.NewRequestFormatter(kmsg.FormatterClientID("authz-interop")).AppendRequest(nil, req, c.corr)
	if _, err := c.nc.Write(buf); err != nil {
		return nil, err
	}
	frame, err := wire.ReadFrame(c.br, 64<<20)
	if err != nil {
		return nil, err
	}
	_, resp, err := wire.ParseResponse(frame, req)
	return resp, err
}

// login runs SaslHandshake and SaslAuthenticate with mechanism:
// SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (an unsigned token).
func (c *rawConn) login(user, mechanism string) error {
	a := scram.Auth{User: user, Pass: password(user)}
	var m sasl.Mechanism
	switch mechanism {
	case "SCRAM-SHA-256":
		m = a.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		m = a.AsSha512Mechanism()
	case "OAUTHBEARER":
		m = oauth.Auth{Token: unsecuredJWT(user)}.AsMechanism()
	default:
		return fmt.Errorf("mechanism %s", mechanism)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = m.Name()
	resp, err := c.do(hs)
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		return fmt.Errorf("SaslHandshake: %w", kerr.ErrorForCode(code))
	}
	sess, msg, err := m.Authenticate(context.Background(), "127.0.0.1")
	if err != nil {
		return err
	}
	for {
		ar := kmsg.NewPtrSASLAuthenticateRequest()
		ar.SetVersion(2)
		ar.SASLAuthBytes = msg
		resp, err := c.do(ar)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != 0 {
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			return fmt.Errorf("%v: %s", kerr.ErrorForCode(r.ErrorCode), msg)
		}
		done, next, err := sess.Challenge(r.SASLAuthBytes)
		if err != nil || done {
			c.lifetime = time.Duration(r.SessionLifetimeMillis) * time.Millisecond
			return err
		}
		msg = next
	}
}

// unsecuredJWT is an unsigned token for sub, as Kafka's unsecured
// OAUTHBEARER validator accepts it.
func unsecuredJWT(sub string) string {
	enc := base64.RawURLEncoding.EncodeToString
	now := time.Now().Unix()
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(fmt.Sprintf(`{"sub":%q,"iat":%d,"exp":%d}`, sub, now, now+3600))) + "."
}

// authCodes is the authorization verdict of a response: every
// *_AUTHORIZATION_FAILED code in it, counted by name, and the authorized
// operations bitfield of a described group.
func authCodes(resp kmsg.Response) string {
	count := map[string]int{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				f, fv := v.Type().Field(i), v.Field(i)
				switch {
				case f.Name == "ErrorCode":
					switch code := int16(fv.Int()); code {
					case kerr.GroupAuthorizationFailed.Code, kerr.TopicAuthorizationFailed.Code,
						kerr.TransactionalIDAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code:
						count[kerr.ErrorForCode(code).(*kerr.Error).Message]++
					}
				case f.Name == "AuthorizedOperations" && fv.Int() != -2147483648:
					count[fmt.Sprintf("ops=%b", fv.Int())]++
				case f.IsExported():
					walk(fv)
				}
			}
		}
	}
	walk(reflect.ValueOf(resp))
	var parts []string
	for k, n := range count {
		parts = append(parts, fmt.Sprintf("%s×%d", k, n))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "allowed"
	}
	return strings.Join(parts, " ")
}

// groupRequests are the group APIs coordhost answers, in an order where
// the requests that delete come last; commit carries the offset written.
func groupRequests(group string, offset int64) []kmsg.Request {
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	fc.CoordinatorKeys = []string{group}

	jg := kmsg.NewPtrJoinGroupRequest()
	jg.SetVersion(9)
	jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = group, 10000, 10000, "consumer"
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}

	sg := kmsg.NewPtrSyncGroupRequest()
	sg.SetVersion(5)
	sg.Group, sg.Generation, sg.MemberID = group, 1, "nobody"
	sg.ProtocolType, sg.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.SetVersion(4)
	hb.Group, hb.Generation, hb.MemberID = group, 1, "nobody"

	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.SetVersion(5)
	lg.Group, lg.Members = group, []kmsg.LeaveGroupRequestMember{{MemberID: "nobody"}}

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.SetVersion(9)
	oc.Group, oc.Generation = group, -1
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}

	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.SetVersion(4)
	tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = "tx", group, 1, 0, -1
	tc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}

	of := kmsg.NewPtrOffsetFetchRequest()
	of.SetVersion(9)
	of.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.SetVersion(5)
	dg.Groups, dg.IncludeAuthorizedOperations = []string{group}, true

	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.SetVersion(4)
	dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: group}}

	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ia.SetVersion(1)
	ia.ValidateOnly = true
	ia.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: group,
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "consumer.session.timeout.ms", Value: kmsg.StringPtr("45000")}}}}

	ac := kmsg.NewPtrAlterConfigsRequest()
	ac.SetVersion(2)
	ac.ValidateOnly = true
	ac.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: group,
		Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "consumer.session.timeout.ms", Value: kmsg.StringPtr("45000")}}}}

	lc := kmsg.NewPtrListConfigResourcesRequest()
	lc.SetVersion(1)
	lc.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeGroupConfig)}

	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = group
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.SetVersion(2)
	del.Groups = []string{group}

	sh := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	sh.Group, sh.MemberID, sh.MemberEpoch, sh.RebalanceTimeoutMillis = group, "authz-member", 0, 10000
	sh.ProcessID = kmsg.StringPtr("authz-process")
	sh.ActiveTasks, sh.StandbyTasks, sh.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	sh.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 1, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{{SubtopologyID: "0", SourceTopics: []string{"t"}}}}

	sd := kmsg.NewPtrStreamsGroupDescribeRequest()
	sd.Groups, sd.IncludeAuthorizedOperations = []string{group}, true

	// a KIP-848 member joins subscribed to t and leaves at once, so the
	// next row finds the group empty
	cj := consumerJoin(group, "authz-consumer", "t")
	cl := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cl.SetVersion(1)
	cl.Group, cl.MemberID, cl.MemberEpoch = group, "authz-consumer", -1

	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.SetVersion(1)
	cd.Groups, cd.IncludeAuthorizedOperations = []string{group}, true

	// a streams topology-description push (READ on the group first)
	td := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	td.Group, td.MemberID, td.TopologyEpoch = group, "authz-member", 1

	return []kmsg.Request{fc, jg, sg, hb, lg, oc, tc, of, dg, dc, ia, ac, lc, od, del, sh, sd, cj, cl, cd, td}
}

// consumerJoin is a ConsumerGroupHeartbeat v1 that joins member to group
// subscribed to topics.
func consumerJoin(group, member string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.SetVersion(1)
	r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = group, member, 0, 10000
	r.SubscribedTopicNames, r.Topics = topics, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return r
}

// TestInteropAuthorization: through coordhost in front of a SASL/ACL
// broker (which serves KIP-848 consumer groups, so coordhost does too),
// every group API gives the authorization verdict the broker gives
// the same principal directly; refused commits write nothing; a group
// request before authentication closes the connection, as on the broker.
func TestInteropAuthorization(t *testing.T) {
	needInterop(t)
	start := time.Now()
	dir := logDir(t)
	pki := testtool.NewPKI(t, "interop CA")
	plain, secure, ssl := startSecureBrokerSSL(t, dir, pki)
	admin, err := kgo.NewClient(kgo.SeedBrokers(plain))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	createACLs(t, admin, authzACLs)
	createTopics(t, admin, 1, "t")
	ch := startCoordhost(t, dir, secure, "--dataplane.sasl.mechanism=SCRAM-SHA-256",
		"--dataplane.sasl.username=admin", "--dataplane.sasl.password="+adminPassword, "--dataplane.authorization.cache.ttl=1s")
	t.Logf("broker and coordhost up in %v", time.Since(start).Round(time.Second))
	reauth := startReauthRun(t, dir, secure)                         // runs beside the subtests below
	javaReauth := startJavaReauthRun(t, dir, secure, ch.addr, admin) // likewise

	t.Run("unauthenticated", func(t *testing.T) {
		for name, addr := range map[string]string{"broker": secure, "coordhost": ch.addr} {
			c := dialKafka(t, addr)
			if _, err := c.do(kmsg.NewPtrApiVersionsRequest()); err != nil {
				t.Fatalf("%s: ApiVersions before authentication: %v", name, err)
			}
			hb := groupRequests("g", 0)[3]
			if resp, err := c.do(hb); err == nil {
				t.Fatalf("%s answered a heartbeat before authentication: %+v", name, resp)
			}
		}
	})

	authzTable(t, secure, ch.addr, admin, 1000, []authzRow{
		{"no ACL", "noacl", "g", "SCRAM-SHA-256"},
		{"exact ACL", "exact", "g", "SCRAM-SHA-512"},
		{"prefixed ACL", "prefixed", "g", "SCRAM-SHA-256"},
		{"DENY over ALLOW", "denyover", "g", "SCRAM-SHA-512"},
		{"wildcard User:*", "noacl", "gw", "SCRAM-SHA-256"},
		{"super user", "admin", "g", "SCRAM-SHA-512"},
		{"OAUTHBEARER exact ACL", "exact", "g", "OAUTHBEARER"},
		{"OAUTHBEARER no ACL", "noacl", "g", "OAUTHBEARER"},
	})
	for _, u := range []string{"noacl", "prefixed", "denyover"} {
		lines := ch.proc.grep("principal=User:" + u + " ")
		if len(lines) == 0 || !strings.Contains(lines[0], "authorization denied") {
			t.Errorf("no audit line names User:%s: %q", u, lines)
		}
	}

	t.Run("consumer group with an undescribable topic", func(t *testing.T) { testConsumerDescribeTopics(t, secure, ch.addr) })
	t.Run("streams group with an undescribable topology topic", func(t *testing.T) { testStreamsDescribeTopics(t, secure, ch.addr, admin) })

	t.Run("client certificates", func(t *testing.T) { testClientCertificates(t, dir, secure, pki) })
	t.Run("client certificates as principals", func(t *testing.T) { testCertificatePrincipals(t, dir, secure, ssl, pki, admin) })
	t.Run("offsets as the client", func(t *testing.T) { testOffsetsAsClient(t, dir, secure, admin) })

	// before the revocation below takes User:exact's READ on g away
	t.Run("transactional commit", func(t *testing.T) { testTxnCommit(t, secure, ch.addr, admin) })

	t.Run("revoked within the TTL", func(t *testing.T) {
		direct, through := dialKafka(t, secure), dialKafka(t, ch.addr)
		for _, c := range []*rawConn{direct, through} {
			if err := c.login("exact", "SCRAM-SHA-256"); err != nil {
				t.Fatal(err)
			}
		}
		hb := groupRequests("g", 0)[3]
		refused := func(c *rawConn) bool {
			resp, err := c.do(hb)
			if err != nil {
				t.Fatal(err)
			}
			return resp.(*kmsg.HeartbeatResponse).ErrorCode == kerr.GroupAuthorizationFailed.Code
		}
		if refused(through) {
			t.Fatal("READ granted, yet refused")
		}
		deleteACL(t, admin, authzACLs[0])
		deadline := time.Now().Add(10 * time.Second)
		for !refused(direct) {
			if time.Now().After(deadline) {
				t.Fatal("the broker still allows after 10s")
			}
			time.Sleep(50 * time.Millisecond)
		}
		revoked := time.Now()
		for !refused(through) {
			time.Sleep(50 * time.Millisecond)
		}
		// the cache TTL is 1s; 1.5x and the broker's own answer time as slack
		if d := time.Since(revoked); d > 1500*time.Millisecond+200*time.Millisecond {
			t.Fatalf("coordhost enforced the revocation %v after the broker", d)
		}
	})
	t.Run("applications", func(t *testing.T) { testAuthorizedApps(t, dir, secure, ch.addr, admin) })
	t.Run("host-scoped ACLs", func(t *testing.T) { testHostACLs(t, dir, secure, admin) })
	t.Run("streams internal topics", func(t *testing.T) { testStreamsInternalTopics(t, secure, ch.addr, admin) })
	t.Run("cut-over from the broker's own coordinator", func(t *testing.T) { testCutOver(t, dir, secure, plain, admin) })
	t.Run("re-authentication", reauth.check)
	t.Run("re-authentication of the Java client", javaReauth.check)
	t.Logf("authorization interop took %v", time.Since(start).Round(time.Second))
}

func deleteACL(t *testing.T, cl *kgo.Client, a acl) {
	t.Helper()
	req := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourceName, f.ResourcePatternType = a.rt, kmsg.StringPtr(a.name), a.pattern
	f.Principal, f.Host, f.Operation, f.PermissionType = kmsg.StringPtr(a.principal), kmsg.StringPtr("*"), a.op, a.perm
	req.Filters = append(req.Filters, f)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Results[0].ErrorCode != 0 || len(resp.Results[0].MatchingACLs) != 1 {
		t.Fatalf("DeleteACLs %+v: %v %+v", a, err, resp)
	}
}

// checkCommitted reads the broker's committed offset of group on t/0 as
// the admin: offset is there exactly when coordhost answered the commit
// without error.
func checkCommitted(t *testing.T, admin *kgo.Client, group string, offset int64, allowed bool) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	var resp *kmsg.OffsetFetchResponse
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var err error
		resp, err = req.RequestWith(ctx, admin)
		cancel()
		if err == nil {
			break
		}
		if !kerr.IsRetriable(err) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var got int64 = -1
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			got = p.Offset
		}
	}
	if (got == offset) != allowed {
		t.Errorf("group %s: broker has offset %d after a commit of %d that coordhost allowed=%v", group, got, offset, allowed)
	}
}

// authzRow is one principal of an authorization table: it logs in as user
// with mech and sends every group API for group.
type authzRow struct{ name, user, group, mech string }

// authzTable: for each row, every group API sent by the same principal
// straight to the broker (secure) and through coordhost gets the same
// authorization verdict; a commit coordhost allows is on the broker, a
// refused one is not. base is the first row's commit offset.
func authzTable(t *testing.T, secure, chAddr string, admin *kgo.Client, base int64, rows []authzRow) {
	t.Helper()
	authzTableWith(t, secure, chAddr, admin, base, rows, true)
}

// authzTableWith is authzTable; sameTxnAnswer also compares the answer to
// an allowed TxnOffsetCommit of a producer without a transaction, which
// comes from the data plane (the broker itself in front of it).
func authzTableWith(t *testing.T, secure, chAddr string, admin *kgo.Client, base int64, rows []authzRow, sameTxnAnswer bool) {
	t.Helper()
	for i, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			direct, through := dialKafka(t, secure), dialKafka(t, chAddr)
			for _, c := range []*rawConn{direct, through} {
				if err := c.login(row.user, row.mech); err != nil {
					t.Fatalf("login %s: %v", row.user, err)
				}
			}
			compareGroupAPIs(t, direct, through, admin, row.user, row.group, base+int64(i), sameTxnAnswer)
		})
	}
}

// compareGroupAPIs sends every group API for group, as one principal
// (who), straight to the broker and through coordhost: the same
// authorization verdicts; a commit coordhost allows is on the broker, a
// refused one is not.
func compareGroupAPIs(t *testing.T, direct, through *rawConn, admin *kgo.Client, who, group string, offset int64, sameTxnAnswer bool) {
	t.Helper()
	var committed bool
	for _, req := range groupRequests(group, offset) {
		name := kmsg.NameForKey(req.Key())
		want, err := direct.do(req)
		if err != nil {
			t.Fatalf("broker %s: %v", name, err)
		}
		got, err := through.do(req)
		if err != nil {
			t.Fatalf("coordhost %s: %v", name, err)
		}
		if w, ok := want.(*kmsg.TxnOffsetCommitResponse); ok && sameTxnAnswer {
			// producer 1 has no transaction: the broker's answer, an
			// error for an allowed commit, comes back as it is
			g, w := got.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, w.Topics[0].Partitions[0].ErrorCode
			if g != w {
				t.Errorf("TxnOffsetCommit as %s: coordhost %v, broker %v", who, kerr.ErrorForCode(g), kerr.ErrorForCode(w))
			}
		}
		if g, w := authCodes(got), authCodes(want); g != w {
			t.Errorf("%s as %s on %s: coordhost %s, broker %s\ncoordhost: %+v\nbroker: %+v", name, who, group, g, w, got, want)
		}
		if r, ok := got.(*kmsg.OffsetCommitResponse); ok {
			committed = r.Topics[0].Partitions[0].ErrorCode == 0
			checkCommitted(t, admin, group, offset, committed)
		}
	}
	t.Logf("%s: commit allowed %v", who, committed)
}

// testConsumerDescribeTopics: the super user's member of gw is assigned t,
// on the broker and on coordhost; noacl may DESCRIBE gw (User:* READ) but
// not t, and gets the broker's TOPIC_AUTHORIZATION_FAILED for the group
// from coordhost too, while the super user sees the member.
func testConsumerDescribeTopics(t *testing.T, secure, chAddr string) {
	describe := kmsg.NewPtrConsumerGroupDescribeRequest()
	describe.SetVersion(1)
	describe.Groups = []string{"gw"}
	for name, addr := range map[string]string{"broker": secure, "coordhost": chAddr} {
		su, reader := dialKafka(t, addr), dialKafka(t, addr)
		if err := su.login("admin", "SCRAM-SHA-512"); err != nil {
			t.Fatal(err)
		}
		if err := reader.login("noacl", "SCRAM-SHA-256"); err != nil {
			t.Fatal(err)
		}
		join := consumerJoin("gw", "authz-reader-"+name, "t")
		resp, err := su.do(join)
		if err != nil {
			t.Fatalf("%s: join: %v", name, err)
		}
		if r := resp.(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != 0 {
			t.Fatalf("%s: the super user's join: %v", name, kerr.ErrorForCode(r.ErrorCode))
		}
		assigned := func(r *kmsg.ConsumerGroupDescribeResponse) bool {
			return len(r.Groups) == 1 && r.Groups[0].ErrorCode == 0 && len(r.Groups[0].Members) == 1 &&
				len(r.Groups[0].Members[0].TargetAssignment.TopicPartitions) == 1
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			resp, err := su.do(describe)
			if err != nil {
				t.Fatalf("%s: describe: %v", name, err)
			}
			if assigned(resp.(*kmsg.ConsumerGroupDescribeResponse)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no assignment of t within 15s: %+v", name, resp)
			}
			time.Sleep(100 * time.Millisecond)
		}
		resp, err = reader.do(describe)
		if err != nil {
			t.Fatalf("%s: describe as noacl: %v", name, err)
		}
		r := resp.(*kmsg.ConsumerGroupDescribeResponse)
		if len(r.Groups) != 1 || r.Groups[0].ErrorCode != kerr.TopicAuthorizationFailed.Code || len(r.Groups[0].Members) != 0 {
			t.Errorf("%s: describe as noacl: %+v, want TOPIC_AUTHORIZATION_FAILED without members", name, r.Groups)
		}
		leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		leave.SetVersion(1)
		leave.Group, leave.MemberID, leave.MemberEpoch = "gw", join.MemberID, -1
		if _, err := su.do(leave); err != nil {
			t.Fatalf("%s: leave: %v", name, err)
		}
	}
}

// testStreamsDescribeTopics: the super user's streams member of a group
// has a topology reading t and hidden-src, and commits both; prefixed may
// DESCRIBE the group (prefix g) and t but not hidden-src. Through coordhost
// as on the broker, prefixed's StreamsGroupDescribe is
// TOPIC_AUTHORIZATION_FAILED without members or topology, an all-topics
// OffsetFetch leaves hidden-src out, and a named one refuses it, while the
// super user sees the whole group. Each side has its own group, as
// coordhost stores its groups' offsets on the same broker.
func testStreamsDescribeTopics(t *testing.T, secure, chAddr string, admin *kgo.Client) {
	createTopics(t, admin, 1, "hidden-src")
	answers := map[string][]string{}
	for name, addr := range map[string]string{"broker": secure, "coordhost": chAddr} {
		group := "gstreams-" + name
		su, reader := dialKafka(t, addr), dialKafka(t, addr)
		if err := su.login("admin", "SCRAM-SHA-512"); err != nil {
			t.Fatal(err)
		}
		if err := reader.login("prefixed", "SCRAM-SHA-256"); err != nil {
			t.Fatal(err)
		}
		streamsMemberCommit(t, name, su, group, "authz-member", 7, "hidden-src", "t")
		describe := kmsg.NewPtrStreamsGroupDescribeRequest()
		describe.Groups = []string{group}
		if a := streamsAnswer(t, name+" super user", su, describe); a != "OK members=1 topology=true" {
			t.Fatalf("%s: the super user's describe: %s", name, a)
		}
		fetchAll := kmsg.NewPtrOffsetFetchRequest()
		fetchAll.SetVersion(9)
		fetchAll.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, MemberEpoch: -1}}
		fetchNamed := kmsg.NewPtrOffsetFetchRequest()
		fetchNamed.SetVersion(9)
		fetchNamed.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, MemberEpoch: -1, Topics: []kmsg.OffsetFetchRequestGroupTopic{
			{Topic: "hidden-src", Partitions: []int32{0}}, {Topic: "t", Partitions: []int32{0}},
		}}}
		for _, req := range []kmsg.Request{describe, fetchAll, fetchNamed} {
			answers[name] = append(answers[name], streamsAnswer(t, name, reader, req))
		}
	}
	want := []string{
		"TOPIC_AUTHORIZATION_FAILED members=0 topology=false",
		"t/0=7",
		"hidden-src/0:TOPIC_AUTHORIZATION_FAILED t/0=7",
	}
	for name, got := range answers {
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s as prefixed:\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// streamsAnswer is the part of a StreamsGroupDescribe or OffsetFetch
// answer that authorization decides: the group's error, member count and
// whether a topology is shown; or each topic-partition's offset or error.
func streamsAnswer(t *testing.T, name string, c *rawConn, req kmsg.Request) string {
	t.Helper()
	resp, err := c.do(req)
	if err != nil {
		t.Fatalf("%s: %s: %v", name, kmsg.NameForKey(req.Key()), err)
	}
	code := func(c int16) string {
		if c == 0 {
			return "OK"
		}
		return kerr.ErrorForCode(c).(*kerr.Error).Message
	}
	switch r := resp.(type) {
	case *kmsg.StreamsGroupDescribeResponse:
		if len(r.Groups) != 1 {
			return fmt.Sprintf("%d groups", len(r.Groups))
		}
		g := r.Groups[0]
		if g.ErrorCode != 0 && (g.ErrorMessage == nil || *g.ErrorMessage != "The described group uses topics that the client is not authorized to describe.") {
			return fmt.Sprintf("%s message %v", code(g.ErrorCode), g.ErrorMessage)
		}
		return fmt.Sprintf("%s members=%d topology=%v", code(g.ErrorCode), len(g.Members), g.Topology != nil)
	case *kmsg.OffsetFetchResponse:
		var parts []string
		for _, g := range r.Groups {
			if g.ErrorCode != 0 {
				parts = append(parts, "group:"+code(g.ErrorCode))
			}
			for _, tp := range g.Topics {
				for _, p := range tp.Partitions {
					if p.ErrorCode != 0 {
						parts = append(parts, fmt.Sprintf("%s/%d:%s", tp.Topic, p.Partition, code(p.ErrorCode)))
					} else {
						parts = append(parts, fmt.Sprintf("%s/%d=%d", tp.Topic, p.Partition, p.Offset))
					}
				}
			}
		}
		sort.Strings(parts)
		return strings.Join(parts, " ")
	}
	return fmt.Sprintf("%T", resp)
}

// testHostACLs: an ACL restricted to a client host cannot be enforced by
// coordhost (the broker sees coordhost's address), so a coordhost started
// while the broker has one refuses to start, naming the ACL and the
// setting; with dataplane.authorization.host.acls=ignore it starts with a
// warning. The ACL is deleted again, so later coordhosts start.
func testHostACLs(t *testing.T, dir, secure string, admin *kgo.Client) {
	const host = "192.0.2.44"
	hostACL := kmsg.NewCreateACLsRequestCreation()
	hostACL.ResourceType, hostACL.ResourceName, hostACL.ResourcePatternType = rGroup, "hostonly", literal
	hostACL.Principal, hostACL.Host, hostACL.Operation, hostACL.PermissionType = "User:exact", host, kmsg.ACLOperationRead, deny
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	create := kmsg.NewPtrCreateACLsRequest()
	create.Creations = append(create.Creations, hostACL)
	if resp, err := create.RequestWith(ctx, admin); err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("CreateACLs with host %s: %v %+v", host, err, resp)
	}
	defer func() {
		del := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName, f.ResourcePatternType = rGroup, kmsg.StringPtr("hostonly"), literal
		f.Principal, f.Host, f.Operation, f.PermissionType = kmsg.StringPtr("User:exact"), kmsg.StringPtr(host), kmsg.ACLOperationRead, deny
		del.Filters = append(del.Filters, f)
		if resp, err := del.RequestWith(ctx, admin); err != nil || resp.Results[0].ErrorCode != 0 || len(resp.Results[0].MatchingACLs) != 1 {
			t.Fatalf("DeleteACLs with host %s: %v %+v", host, err, resp)
		}
	}()
	flags := []string{"--dataplane.sasl.mechanism=SCRAM-SHA-256", "--dataplane.sasl.username=admin", "--dataplane.sasl.password=" + adminPassword}
	// the broker lists a new ACL once its metadata has it
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		acls, err := authz.ListHostACLs(ctx, admin.Request)
		if err != nil {
			t.Fatal(err)
		}
		if len(acls) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker lists %d host-scoped ACLs", len(acls))
		}
	}
	refused := startCoordhostProc(t, dir, "coordhost-hostacl", secure, flags...)
	if _, _, err := refused.waitLine("coordhost is serving", 0, time.Minute); err == nil || !refused.exited() {
		t.Fatalf("coordhost did not refuse to start with a host-scoped ACL on the broker (%v)\n%s", err, refused.tail(30))
	}
	out := refused.tail(30)
	for _, want := range []string{"ACLs restricted to a client host", "User:exact from host " + host + " DENY READ on GROUP hostonly (LITERAL)",
		"dataplane.authorization.host.acls=ignore"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, out)
		}
	}
	ignoring := startCoordhost(t, dir, secure, append(flags, "--dataplane.authorization.host.acls=ignore")...)
	if lines := ignoring.proc.grep("restricted to a client host", host); len(lines) == 0 || !strings.Contains(lines[0], "WARN") {
		t.Errorf("no warning names the host-scoped ACL: %q", lines)
	}
	if err := ignoring.proc.stop(30 * time.Second); err != nil {
		t.Log(err)
	}
}

// startCoordhostProc starts coordhost in front of dataplane without
// waiting for it to serve.
func startCoordhostProc(t *testing.T, dir, name, dataplane string, extra ...string) *proc {
	t.Helper()
	args := append([]string{"serve", fmt.Sprintf("--kafka.listen=127.0.0.1:%d", freePort(t)), fmt.Sprintf("--admin.listen=127.0.0.1:%d", freePort(t)),
		"--data.dir=" + filepath.Join(t.TempDir(), "coordhost-data"), "--dataplane.mode=external", "--dataplane.bootstrap=" + dataplane}, coordhostFlags...)
	return startProc(t, name, dir, coordhostBinary(t), append(args, extra...)...)
}

// testStreamsInternalTopics: noacl may READ groups and DESCRIBE topics
// starting with itc-, but not CREATE. A streams member whose topology
// needs a changelog topic gets, through coordhost as from the broker, the
// MISSING_INTERNAL_TOPICS status naming the unauthorized CREATE (the same
// text but for the group name), and the topic is not created. With CREATE
// on the prefix, the next heartbeats create it on both (coordhost over the
// member's own session, never as its own user). Each side has its own
// group, so its own changelog topic.
func testStreamsInternalTopics(t *testing.T, secure, chAddr string, admin *kgo.Client) {
	createTopics(t, admin, 1, "itc-src")
	createACLs(t, admin, []acl{
		{"User:noacl", rGroup, "itc-", prefixed, kmsg.ACLOperationRead, allow},
		{"User:noacl", rTopic, "itc-", prefixed, kmsg.ACLOperationDescribe, allow},
	})
	sides := map[string]string{"broker": secure, "coordhost": chAddr}
	conns := map[string]*rawConn{}
	joins := map[string]*kmsg.StreamsGroupHeartbeatRequest{}
	for name, addr := range sides {
		c := dialKafka(t, addr)
		if err := c.login("noacl", "SCRAM-SHA-256"); err != nil {
			t.Fatal(err)
		}
		group := "itc-" + name
		join := groupRequests(group, 0)[15].(*kmsg.StreamsGroupHeartbeatRequest)
		join.MemberID = "itc-member-" + name
		join.Topology.Subtopologies[0].SourceTopics = []string{"itc-src"}
		join.Topology.Subtopologies[0].StateChangelogTopics = []kmsg.TopicInfo{{Topic: group + "-store-changelog"}}
		conns[name], joins[name] = c, join
	}
	// the status of MISSING_INTERNAL_TOPICS, the group's name made neutral
	missing := func(name string) (string, int32) {
		resp, err := conns[name].do(joins[name])
		if err != nil {
			t.Fatalf("%s: streams heartbeat: %v", name, err)
		}
		hb := resp.(*kmsg.StreamsGroupHeartbeatResponse)
		if hb.ErrorCode != 0 {
			t.Fatalf("%s: streams heartbeat: %v", name, kerr.ErrorForCode(hb.ErrorCode))
		}
		if hb.MemberEpoch > 0 { // the topology goes with the join only
			joins[name].Topology = nil
		}
		for _, s := range hb.Status {
			if s.StatusCode == 3 {
				return strings.ReplaceAll(s.StatusDetail, "itc-"+name, "itc-GROUP"), hb.MemberEpoch
			}
		}
		return "", hb.MemberEpoch
	}
	exists := func(name string) bool {
		topic := "itc-" + name + "-store-changelog"
		md := kmsg.NewPtrMetadataRequest()
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := md.RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].ErrorCode == 0
	}
	details := map[string]string{}
	for name := range sides {
		// coordhost learns of itc-src with its next topic refresh
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			d, epoch := missing(name)
			joins[name].MemberEpoch = epoch
			if strings.Contains(d, "Unauthorized") || time.Now().After(deadline) {
				details[name] = d
				break
			}
		}
	}
	want := "Internal topics are missing: itc-GROUP-store-changelog; Unauthorized to CREATE on topics itc-GROUP-store-changelog."
	if details["broker"] != details["coordhost"] || !strings.Contains(details["broker"], "Unauthorized to CREATE on topics itc-GROUP-store-changelog") {
		t.Errorf("without CREATE, MISSING_INTERNAL_TOPICS:\nbroker    %q\ncoordhost %q\n(expected like %q)", details["broker"], details["coordhost"], want)
	}
	for name := range sides {
		if exists(name) {
			t.Errorf("%s: the changelog topic was created without CREATE", name)
		}
	}

	createACLs(t, admin, []acl{{"User:noacl", rTopic, "itc-", prefixed, kmsg.ACLOperationCreate, allow}})
	for name := range sides {
		for deadline := time.Now().Add(20 * time.Second); !exists(name); time.Sleep(250 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the changelog topic was not created with CREATE (status %q)", name, details[name])
			}
			details[name], joins[name].MemberEpoch = missing(name)
		}
	}
}
