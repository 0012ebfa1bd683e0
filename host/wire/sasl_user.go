package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// saslUser is the user name a client claims in its first SASL message for
// mechanism (PLAIN: the authorization id, else the authentication id;
// SCRAM: the n= attribute; OAUTHBEARER: the a= authorization id of the GS2
// header, else the token's sub claim), or "" when the message names none. The name is only a claim: a
// connection reports it once the cluster accepted the authentication. It
// never panics on any input.
func saslUser(mechanism string, first []byte) string {
	switch {
	case mechanism == "PLAIN":
		parts := bytes.Split(first, []byte{0})
		if len(parts) != 3 {
			return ""
		}
		if len(parts[0]) > 0 {
			return string(parts[0])
		}
		return string(parts[1])
	case strings.HasPrefix(mechanism, "SCRAM-"):
		return gs2Attr(first, "n=", 2)
	case mechanism == "OAUTHBEARER":
		if a := gs2Attr(first, "a=", 1); a != "" {
			return a
		}
		return bearerSubject(first)
	}
	return ""
}

// bearerSubject is the sub claim of the token in an OAUTHBEARER client
// message ("auth=Bearer <header>.<payload>.<signature>"), the claim Kafka's
// default principal comes from; "" when there is none.
func bearerSubject(msg []byte) string {
	for _, kv := range bytes.Split(msg, []byte{1}) {
		tok, ok := bytes.CutPrefix(kv, []byte("auth=Bearer "))
		if !ok {
			continue
		}
		parts := bytes.Split(tok, []byte{'.'})
		if len(parts) != 3 {
			return ""
		}
		payload, err := base64.RawURLEncoding.DecodeString(string(bytes.TrimRight(parts[1], "=")))
		if err != nil {
			return ""
		}
		var claims struct {
			Sub string `json:"sub"`
		}
		if json.Unmarshal(payload, &claims) != nil {
			return ""
		}
		return claims.Sub
	}
	return ""
}

// gs2Attr finds attribute key (with its '=') among the first n+1 comma-
// separated fields of a GS2/SCRAM message, decoding SCRAM's =2C and =3D.
func gs2Attr(msg []byte, key string, n int) string {
	head, _, _ := bytes.Cut(msg, []byte{1}) // OAUTHBEARER: the GS2 header ends at ^A
	fields := strings.SplitN(string(head), ",", n+2)
	for i, f := range fields {
		if i > n {
			break
		}
		if v, ok := strings.CutPrefix(f, key); ok {
			return strings.NewReplacer("=2C", ",", "=3D", "=").Replace(v)
		}
	}
	return ""
}
