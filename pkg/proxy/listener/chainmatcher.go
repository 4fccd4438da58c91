package listener

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	networkinputsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/network/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
)

// connData is what the filter_chain_matcher's inputs read of a
// connection: its addresses (remote and local as the listener filters
// restored them, direct the peer's own) and what the listener filters
// detected.
type connData struct {
	local, remote, direct netip.AddrPort
	det                   *detected
}

// chainMatcher is a compiled Listener.filter_chain_matcher: its actions
// find the chains (chainaction.go).
type chainMatcher = httpmatch.Tree[*connData, *chainAction]

// compileChainMatcher compiles the listener's filter_chain_matcher over
// the chains by name, its custom input matchers with env. Errors name the
// field below filter_chain_matcher.
func compileChainMatcher(m *xdsmatcherv3.Matcher, byName map[string]*chain, env httpmatch.Env) (*chainMatcher, error) {
	action := func(tc *xdscorev3.TypedExtensionConfig, path string) (*chainAction, error) {
		return compileChainAction(tc, path, byName)
	}
	return httpmatch.CompileProbedEnv(m, action, compileConnInput, env)
}

// compileConnInput compiles one of Envoy's network matching inputs,
// reading the connection as Envoy's inputs do (addresses without their
// IPv4-mapped prefix, ports in decimal, the ALPN list as 'a','b').
func compileConnInput(tc *xdscorev3.TypedExtensionConfig, path string) (httpmatch.Probe[*connData], error) {
	msg, err := httpmatch.TypedConfig(tc, path, "an input")
	if err != nil {
		return nil, err
	}
	switch msg.(type) {
	case *networkinputsv3.DestinationIPInput:
		return connAddr(func(d *connData) netip.AddrPort { return d.local }), nil
	case *networkinputsv3.DestinationPortInput:
		return connPort(func(d *connData) netip.AddrPort { return d.local }), nil
	case *networkinputsv3.SourceIPInput:
		return connAddr(func(d *connData) netip.AddrPort { return d.remote }), nil
	case *networkinputsv3.SourcePortInput:
		return connPort(func(d *connData) netip.AddrPort { return d.remote }), nil
	case *networkinputsv3.DirectSourceIPInput:
		return connAddr(func(d *connData) netip.AddrPort { return d.direct }), nil
	case *networkinputsv3.SourceTypeInput:
		// "local" for a connection from the same address or loopback,
		// none otherwise, as Envoy's SourceTypeInput.
		return func(d *connData) (string, bool, bool) {
			r := d.remote.Addr()
			local := r.IsLoopback() || r == d.local.Addr()
			if local {
				return "local", true, true
			}
			return "", false, true
		}, nil
	case *networkinputsv3.ServerNameInput:
		return func(d *connData) (string, bool, bool) {
			return d.det.sni, d.det.sni != "", true
		}, nil
	case *networkinputsv3.TransportProtocolInput:
		return func(d *connData) (string, bool, bool) {
			return d.det.transport, d.det.transport != "", true
		}, nil
	case *networkinputsv3.ApplicationProtocolInput:
		return func(d *connData) (string, bool, bool) {
			if len(d.det.alpn) == 0 {
				return "", false, true
			}
			return "'" + strings.Join(d.det.alpn, "','") + "'", true, true
		}, nil
	}
	return nil, fmt.Errorf("%s.typed_config: a filter chain matcher cannot match on %s", path, proto.MessageName(msg))
}

// connAddr reads an address's IP; absent when the connection has none.
func connAddr(addr func(*connData) netip.AddrPort) httpmatch.Probe[*connData] {
	return func(d *connData) (string, bool, bool) {
		a := addr(d).Addr()
		if !a.IsValid() {
			return "", false, true
		}
		return a.Unmap().String(), true, true
	}
}

// connPort reads an address's port; absent when the connection has none.
func connPort(addr func(*connData) netip.AddrPort) httpmatch.Probe[*connData] {
	return func(d *connData) (string, bool, bool) {
		a := addr(d)
		if !a.IsValid() {
			return "", false, true
		}
		return strconv.Itoa(int(a.Port())), true, true
	}
}
