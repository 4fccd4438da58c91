// Package httpcapsule is the UDP proxy's HTTP capsule session filter
// (envoy.filters.udp.session.http_capsule): each datagram from the client
// goes upstream as an HTTP DATAGRAM capsule (RFC 9297) carrying a
// CONNECT-UDP payload (RFC 9298: context ID 0, then the datagram), and the
// capsules the host sends back, which may span or share its datagrams, are
// parsed into the datagrams they carry for the client.
package httpcapsule

import (
	"fmt"

	capsulev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/session/http_capsule/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/capsule"
	"github.com/outrigger-dev/outrigger/pkg/proxy/udpfilter"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.udp.session.http_capsule"

// Factory compiles the filter's (empty) configuration.
type Factory struct{}

var _ udpfilter.SessionFactory = Factory{}

// CompileSession implements udpfilter.SessionFactory.
func (Factory) CompileSession(config proto.Message) (udpfilter.SessionFilterConfig, error) {
	if _, ok := config.(*capsulev3.FilterConfig); !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&capsulev3.FilterConfig{}), config)
	}
	return filterConfig{}, nil
}

// filterConfig makes a filter per session.
type filterConfig struct{}

// NewSessionFilter implements udpfilter.SessionFilterConfig.
func (filterConfig) NewSessionFilter() udpfilter.SessionFilter { return &filter{} }

// filter is one session's capsule encoder and parser.
type filter struct {
	// p parses the host's bytes: once it failed, as quiche's parser,
	// the filter passes nothing more on.
	p capsule.Parser
}

// OnData implements udpfilter.SessionFilter: the datagram becomes a
// DATAGRAM capsule whose payload is context ID 0 and the datagram.
func (f *filter) OnData(b []byte) ([]byte, bool) {
	n := uint64(len(b)) + 1
	out := make([]byte, 0, 1+capsule.VarintLen(n)+int(n))
	return capsule.AppendDatagram(out, b), true
}

// OnWrite implements udpfilter.SessionFilter: it parses the capsules that
// the bytes complete and returns the datagrams of those that are
// DATAGRAM capsules with context ID 0; other capsule types and context
// IDs are dropped, as in Envoy.
func (f *filter) OnWrite(b []byte) [][]byte {
	// A parse failure stops the flow back; what came before it passes.
	out, _ := f.p.Parse(b)
	return out
}
