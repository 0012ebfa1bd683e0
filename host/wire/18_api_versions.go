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
	if f := c.s.cfg.Features; f != nil && code == 0 {
		for _, sf := range f.Supported {
			if c.featureServed(sf.Name) {
				resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
			}
		}
		for _, ff := range f.Finalized {
			if c.featureServed(ff.Name) {
				resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
			}
		}
		resp.FinalizedFeaturesEpoch = f.Epoch
	}
	return resp
}

// Features are the data plane's KIP-584 features, advertised in
// ApiVersions v3+ so clients see the cluster's transaction and metadata
// versions.
type Features struct {
	Supported []kmsg.ApiVersionsResponseSupportedFeature
	Finalized []kmsg.ApiVersionsResponseFinalizedFeature
	Epoch     int64
}

// featureServed reports whether a data-plane feature may be advertised:
// not share.version (KIP-932 share groups are not served), and
// group.version (KIP-848 consumer groups; Java clients need it to use the
// consumer protocol) only while ConsumerGroupHeartbeat is served.
func (c *conn) featureServed(name string) bool {
	switch name {
	case "share.version":
		return false
	case "group.version":
		return c.s.cfg.Table.Serves(int16(kmsg.ConsumerGroupHeartbeat), 0)
	}
	return true
}
