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

// ServesConsumerGroups reports whether a data plane that advertised
// versions and f serves KIP-848 consumer groups itself: both
// ConsumerGroupHeartbeat and ConsumerGroupDescribe advertised, and
// group.version finalized at level 1 or more. In front of an external
// cluster coordhost serves them only then, so its authorizer's answer for
// them can be asked and group.version is mirrored as the cluster's.
func ServesConsumerGroups(versions map[int16]VersionRange, f *Features) bool {
	for _, k := range ConsumerGroupKeys {
		if _, ok := versions[int16(k)]; !ok {
			return false
		}
	}
	if f == nil {
		return false
	}
	for _, ff := range f.Finalized {
		if ff.Name == "group.version" {
			return ff.MaxVersionLevel >= 1
		}
	}
	return false
}
