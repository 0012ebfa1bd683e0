package wire

import "github.com/twmb/franz-go/pkg/kmsg"

// apiVersions answers ApiVersions from the version table, so what is
// advertised is exactly what is served. An unsupported request version gets
// a v0 response carrying UNSUPPORTED_VERSION and the key list (KIP-511).
func (c *conn) apiVersions(code int16, version int16) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	resp.ErrorCode = code
	for _, e := range c.s.cfg.Table.Entries() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = e.Key, e.Min, e.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}
