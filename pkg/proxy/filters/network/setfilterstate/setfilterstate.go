// Package setfilterstate is the set_filter_state network filter
// (envoy.filters.network.set_filter_state): it renders substitution
// formats with what the connection knows (its addresses, the server name
// the client asked for, its TLS session, dynamic metadata and filter
// state) and keeps the objects made of them in the connection's filter
// state, where tcp_proxy (envoy.tcp_proxy.cluster), the clusters, the
// RBAC filter, the access logs and the HTTP filters of the connection's
// requests read them.
package setfilterstate

import (
	"errors"
	"fmt"
	"net"

	sfsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/set_filter_state/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/setfilterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// Name is the filter's name in the proxy. spelling.
const Name = "proxy.filters.network.set_filter_state"

// Factory compiles set_filter_state Configs.
type Factory struct{}

var _ netfilter.Factory = Factory{}

// Compile implements netfilter.Factory. on_downstream_data is refused
// by the support table: the network filters run once, before the terminal
// filter reads, and none is called again on the first bytes.
func (Factory) Compile(msg proto.Message, ctx netfilter.Context) (netfilter.Filter, error) {
	cfg, ok := msg.(*sfsv3.Config)
	if !ok {
		return nil, fmt.Errorf("expected a %s, got %T", proto.MessageName(&sfsv3.Config{}), msg)
	}
	onNew, err1 := setfilterstate.Compile(cfg.GetOnNewConnection(), "on_new_connection", ctx.Extensions)
	onTLS, err2 := setfilterstate.Compile(cfg.GetOnDownstreamTlsHandshake(), "on_downstream_tls_handshake", ctx.Extensions)
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	return &Filter{onNew: onNew, onTLS: onTLS}, nil
}

// Filter is the compiled filter.
type Filter struct {
	onNew, onTLS setfilterstate.Values
}

var (
	_ netfilter.ReadFilter = (*Filter)(nil)
	_ netfilter.DataFilter = (*Filter)(nil)
)

// OnNewConnection implements netfilter.ReadFilter: on_new_connection.
func (f *Filter) OnNewConnection(c netfilter.Conn) *netfilter.Refusal {
	apply(&f.onNew, c)
	return nil
}

// OnData implements netfilter.DataFilter: on_downstream_tls_handshake,
// once the TLS handshake is done (at once on a plaintext connection,
// as Envoy applies them then), before the terminal filter takes the
// connection.
func (f *Filter) OnData(c net.Conn) *netfilter.Refusal {
	apply(&f.onTLS, c)
	return nil
}

// apply renders vs with c's entry into c's filter state; a connection
// without one (not a listener's) keeps nothing.
func apply(vs *setfilterstate.Values, c net.Conn) {
	if vs.Empty() {
		return
	}
	fs, ok := c.(netfilter.FilterStater)
	if !ok {
		return
	}
	vs.Apply(connEntry(c, fs), func(key string, obj accesslog.FilterStateObject) {
		fs.SetFilterState(key, obj)
	})
}

// connEntry is what a format reads of a connection: its addresses, the
// server name and TLS session, filter chain, dynamic metadata and filter
// state. Request and upstream operators have no value.
func connEntry(c net.Conn, fs netfilter.FilterStater) *accesslog.Entry {
	e := &accesslog.Entry{
		DownstreamRemoteAddress: accesslog.AddressString(c.RemoteAddr()),
		DownstreamLocalAddress:  accesslog.AddressString(c.LocalAddr()),
		RequestedServerName:     accesslog.RequestedServerName(c),
		FilterChainName:         accesslog.FilterChainName(c),
		TLS:                     tlsconfig.AccessLogInfo(c),
		DynamicMetadata:         netfilter.DynamicMetadataOf(c),
		ConnFilterState:         fs,
	}
	e.TLSJA3Fingerprint, e.TLSJA4Fingerprint = accesslog.TLSFingerprints(c)
	return e
}
