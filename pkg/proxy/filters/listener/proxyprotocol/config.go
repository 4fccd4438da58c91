// Package proxyprotocol is the listener filter
// envoy.filters.listener.proxy_protocol: it reads the PROXY protocol
// header (v1 text, v2 binary) a load balancer sends ahead of a client's
// bytes, consumes exactly that header and restores the client's address
// as the connection's remote address and the original destination as its
// local address.
package proxyprotocol

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	ppv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/proxy_protocol/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.listener.proxy_protocol"

// Factory compiles the filter's configuration.
type Factory struct{}

// Compile builds the filter. tlv_location FILTER_STATE is refused by the
// support check; it is refused here too, so that a configuration that
// reaches the factory some other way is never half-applied.
func (Factory) Compile(config proto.Message, ctx listenerfilter.Context) (listenerfilter.Filter, error) {
	cfg, ok := config.(*ppv3.ProxyProtocol)
	if !ok {
		return nil, fmt.Errorf("proxy_protocol: unexpected configuration %T", config)
	}
	var errs []error
	for i, r := range cfg.GetRules() {
		if r.GetTlvType() > 255 {
			errs = append(errs, fmt.Errorf("rules[%d].tlv_type: %d is not a TLV type (0 to 255)", i, r.GetTlvType()))
		}
		if r.GetOnTlvPresent() != nil && r.GetOnTlvPresent().GetKey() == "" {
			errs = append(errs, fmt.Errorf("rules[%d].on_tlv_present.key: must not be empty", i))
		}
	}
	pass, err := upstream.CompileTLVSelection(cfg.GetPassThroughTlvs(), "pass_through_tlvs")
	if err != nil {
		errs = append(errs, err)
	}
	if cfg.GetTlvLocation() != ppv3.ProxyProtocol_DYNAMIC_METADATA {
		errs = append(errs, errors.New("tlv_location: FILTER_STATE is not supported by Outrigger"))
	}
	p := parser{allowMissing: cfg.GetAllowRequestsWithoutProxyProtocol(), allowV1: true, allowV2: true}
	for _, v := range cfg.GetDisallowedVersions() {
		switch v {
		case corev3.ProxyProtocolConfig_V1:
			p.allowV1 = false
		case corev3.ProxyProtocolConfig_V2:
			p.allowV2 = false
		}
	}
	if !p.allowV1 && !p.allowV2 {
		// Envoy's wording (without its final period).
		errs = append(errs, errors.New("disallowed_versions: Proxy Protocol filter is misconfigured: all proxy protocol versions are disallowed"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if ctx.Stats == nil {
		return nil, errors.New("proxy_protocol: no stat store")
	}
	return &filter{parser: p, stats: newFilterStats(ctx.Stats.Scope(""), cfg.GetStatPrefix()), rules: compileRules(cfg.GetRules()), pass: pass}, nil
}

// filterStats are Envoy's proxy_protocol stats: the legacy
// downstream_cx_proxy_proto_error at the root, the others under
// "proxy_proto.[<stat_prefix>.]".
type filterStats struct {
	legacyError        *stats.Counter
	notFoundAllowed    *stats.Counter
	notFoundDisallowed *stats.Counter
	versions           [2]versionStats // v1, v2
}

// versionStats are the stats of one version, under "versions.v<n>.".
type versionStats struct {
	found, disallowed, errored *stats.Counter
}

func newFilterStats(root stats.Scope, prefix string) filterStats {
	name := "proxy_proto."
	if prefix != "" {
		name += prefix + "."
	}
	scope := root.Scope(name)
	fs := filterStats{
		legacyError:        root.Counter("downstream_cx_proxy_proto_error"),
		notFoundAllowed:    scope.Counter("not_found_allowed"),
		notFoundDisallowed: scope.Counter("not_found_disallowed"),
	}
	for i := range fs.versions {
		vs := scope.Scope(fmt.Sprintf("versions.v%d.", i+1))
		fs.versions[i] = versionStats{found: vs.Counter("found"), disallowed: vs.Counter("disallowed"), errored: vs.Counter("error")}
	}
	return fs
}

// count records the final outcome of a connection's parse, as Envoy's
// filter does.
func (fs *filterStats) count(r result) {
	if r.version == 0 {
		switch r.outcome {
		case done:
			fs.notFoundAllowed.Inc()
		case malformed:
			fs.notFoundDisallowed.Inc()
			fs.legacyError.Inc()
		}
		return
	}
	vs := &fs.versions[r.version-1]
	switch r.outcome {
	case done:
		vs.found.Inc()
	case denied:
		vs.found.Inc()
		vs.disallowed.Inc()
	case malformed:
		vs.errored.Inc()
		fs.legacyError.Inc()
	}
}
