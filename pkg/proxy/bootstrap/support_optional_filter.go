package bootstrap

import (
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// httpFilterName is the message of every HTTP filter list entry: the
// connection manager's, a cluster's and the router's upstream chains.
const httpFilterName protoreflect.FullName = "envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter"

// httpFilter checks one HTTP filter entry. An optional one (is_optional)
// that no enabled filter of this build would configure is left out, as
// Envoy leaves out one it has no factory for (the chain builders warn
// then); any other is checked like a message.
func (c *supportChecker) httpFilter(m protoreflect.Message, path string) {
	if f, ok := m.Interface().(*hcmv3.HttpFilter); ok && httpfilter.OptionalMissing(f, c.ext, true, "envoy.filters.http", httpfilter.UpstreamCategory) {
		return
	}
	c.message(m, path)
}
