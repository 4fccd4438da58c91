//lint:file-ignore SA1019 this file reads the deprecated cluster-level HTTP options as Envoy reads them

package cluster

import (
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
)

// legacyPath stands for the cluster in the paths of the HttpProtocolOptions
// built from the deprecated fields; legacyError turns them back into the
// fields' own paths.
const legacyPath = "<legacy>"

// legacyHTTPFields names the deprecated cluster-level HTTP fields that are
// set, in declaration order.
func legacyHTTPFields(c *clusterv3.Cluster) []string {
	var set []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"http_protocol_options", c.GetHttpProtocolOptions() != nil},
		{"http2_protocol_options", c.GetHttp2ProtocolOptions() != nil},
		{"common_http_protocol_options", c.GetCommonHttpProtocolOptions() != nil},
		{"upstream_http_protocol_options", c.GetUpstreamHttpProtocolOptions() != nil},
		{"protocol_selection", c.GetProtocolSelection() != clusterv3.Cluster_USE_CONFIGURED_PROTOCOL},
	} {
		if f.set {
			set = append(set, f.name)
		}
	}
	return set
}

// legacyHTTPOptions is the HttpProtocolOptions the deprecated fields say,
// as Envoy's createProtocolOptionsConfig builds it: USE_DOWNSTREAM_PROTOCOL
// follows the client with both protocols' options; otherwise HTTP/2 when
// http2_protocol_options is set, else HTTP/1.1, and both at once is an
// error.
func legacyHTTPOptions(c *clusterv3.Cluster) (*httpv3.HttpProtocolOptions, error) {
	h1, h2 := c.GetHttpProtocolOptions(), c.GetHttp2ProtocolOptions()
	opts := &httpv3.HttpProtocolOptions{
		//lint:ignore SA1019 as above
		CommonHttpProtocolOptions: c.GetCommonHttpProtocolOptions(),
		//lint:ignore SA1019 as above
		UpstreamHttpProtocolOptions: c.GetUpstreamHttpProtocolOptions(),
	}
	switch {
	case c.GetProtocolSelection() == clusterv3.Cluster_USE_DOWNSTREAM_PROTOCOL:
		opts.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_UseDownstreamProtocolConfig{
			UseDownstreamProtocolConfig: &httpv3.HttpProtocolOptions_UseDownstreamHttpConfig{HttpProtocolOptions: h1, Http2ProtocolOptions: h2},
		}
	case h1 != nil && h2 != nil:
		return nil, configErrorf("http_protocol_options", "cannot be combined with http2_protocol_options unless protocol_selection is USE_DOWNSTREAM_PROTOCOL (Envoy: both HTTP1 and HTTP2 options may only be configured with non-default 'protocol_selection' values)")
	case h2 != nil:
		opts.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{
			ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: h2},
			},
		}
	default:
		if h1 == nil {
			h1 = &corev3.Http1ProtocolOptions{}
		}
		opts.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{
			ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: h1},
			},
		}
	}
	return opts, nil
}

// legacyError gives an error about the HttpProtocolOptions that
// legacyHTTPOptions built the path of the deprecated field it came from.
func legacyError(err error) error {
	fe, ok := err.(*bootstrap.FieldError)
	if !ok || !strings.HasPrefix(fe.Path, legacyPath) {
		return err
	}
	p := strings.TrimPrefix(strings.TrimPrefix(fe.Path, legacyPath), ".")
	for _, config := range []string{"explicit_http_config.", "use_downstream_protocol_config."} {
		p = strings.TrimPrefix(p, config)
	}
	return &bootstrap.FieldError{Path: p, Reason: fe.Reason}
}
