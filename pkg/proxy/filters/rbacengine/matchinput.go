package rbacengine

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	networkinputsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/network/v3"
	sslinputsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/ssl/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filterstate"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpmatch"
)

// compileMatchInput compiles one of the inputs Envoy allows an RBAC
// filter's matcher (its ActionValidationVisitor's list), reading them as
// Envoy's inputs do: the request headers (HTTP only; several values
// joined by ","), the addresses as the stream's address provider gives
// them (Envoy's HttpMatchingDataImpl: the source is the client's address
// as the connection manager trusts it, an x-forwarded-for entry when
// use_remote_address and xff_num_trusted_hops say so, with port 0 then;
// for a connection, its remote address, the one a PROXY protocol header
// restored), the SNI, and the client certificate's URI SANs,
// DNS SANs and subject, which cannot be read on a plaintext connection
// (the match is then unable to complete and denies). needs says what the
// input reads beyond the request head.
func compileMatchInput(tc *xdscorev3.TypedExtensionConfig, path string, f Filter) (httpmatch.Probe[*Input], Needs, error) {
	msg, err := httpmatch.TypedConfig(tc, path, "an input")
	if err != nil {
		return nil, 0, err
	}
	switch in := msg.(type) {
	case *matcherv3.HttpRequestHeaderMatchInput:
		if f != HTTPFilter {
			break
		}
		name := strings.ToLower(in.GetHeaderName())
		return func(in *Input) (string, bool, bool) {
			if in.Request == nil {
				return "", false, true
			}
			v, ok := in.Request.Header(name)
			return v, ok, true
		}, 0, nil
	case *networkinputsv3.SourceIPInput:
		return addrProbe(func(in *Input) netip.Addr { return in.Remote }), NeedAddresses, nil
	case *networkinputsv3.SourcePortInput:
		return func(in *Input) (string, bool, bool) {
			// An address taken from x-forwarded-for has no port.
			var port uint16
			if in.Remote == in.Source {
				port = in.SourcePort
			}
			return strconv.Itoa(int(port)), in.Remote.IsValid(), true
		}, NeedAddresses, nil
	case *networkinputsv3.DestinationIPInput:
		return addrProbe(func(in *Input) netip.Addr { return in.Local.Addr() }), NeedAddresses, nil
	case *networkinputsv3.DestinationPortInput:
		return func(in *Input) (string, bool, bool) {
			return strconv.Itoa(int(in.Local.Port())), in.Local.IsValid(), true
		}, NeedAddresses, nil
	case *networkinputsv3.DirectSourceIPInput:
		return addrProbe(func(in *Input) netip.Addr { return in.DirectRemote }), NeedAddresses, nil
	case *networkinputsv3.ServerNameInput:
		return func(in *Input) (string, bool, bool) {
			return in.ServerName, in.ServerName != "", true
		}, NeedTLS, nil
	case *sslinputsv3.UriSanInput:
		return peerProbe(func(p *Peer) string { return strings.Join(p.URIs, ",") }), NeedTLS, nil
	case *sslinputsv3.DnsSanInput:
		return peerProbe(func(p *Peer) string { return strings.Join(p.DNSNames, ",") }), NeedTLS, nil
	case *sslinputsv3.SubjectInput:
		return peerProbe(func(p *Peer) string { return p.Subject }), NeedTLS, nil
	case *networkinputsv3.FilterStateInput:
		// Envoy's network RBAC filter reads it; its HTTP one refuses it.
		if f == NetworkFilter {
			return filterStateProbe(in.GetKey()), NeedFilterState, nil
		}
	case *networkinputsv3.DynamicMetadataInput:
		if f == HTTPFilter {
			return nil, 0, fmt.Errorf("%s.typed_config: input %s is not supported by Outrigger (it needs the metadata input matcher)", path, proto.MessageName(msg))
		}
	}
	if f == HTTPFilter {
		return nil, 0, fmt.Errorf("%s.typed_config: the RBAC HTTP filter cannot match on %s", path, proto.MessageName(msg))
	}
	return nil, 0, fmt.Errorf("%s.typed_config: the RBAC network filter cannot match %s", path, proto.MessageName(msg))
}

// filterStateProbe reads the PLAIN form of the filter state object under
// key, as Envoy's FilterStateInput: absent without an object, or with
// one that has no string form.
func filterStateProbe(key string) httpmatch.Probe[*Input] {
	return func(in *Input) (string, bool, bool) {
		if in.FilterState == nil {
			return "", false, true
		}
		v, ok := in.FilterState(key)
		if !ok {
			return "", false, true
		}
		s, ok := filterstate.StringOf(v)
		return s, ok, true
	}
}

// addrProbe reads an address as Envoy's IP inputs render it; absent when
// the connection has none (not an IP connection).
func addrProbe(addr func(*Input) netip.Addr) httpmatch.Probe[*Input] {
	return func(in *Input) (string, bool, bool) {
		a := addr(in)
		if !a.IsValid() {
			return "", false, true
		}
		return a.Unmap().String(), true, true
	}
}

// peerProbe reads the client certificate as Envoy's TLS inputs do: not
// available without TLS, absent without a certificate or an empty value.
func peerProbe(value func(*Peer) string) httpmatch.Probe[*Input] {
	return func(in *Input) (string, bool, bool) {
		if !in.TLS {
			return "", false, false
		}
		if in.Peer == nil {
			return "", false, true
		}
		v := value(in.Peer)
		return v, v != "", true
	}
}
