package upstreamproxyprotocol

import (
	"bytes"
	"net"
	"net/netip"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	ppv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/proxy_protocol/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// fakeConn is a connection with fixed addresses, for the headers that
// describe the connection itself.
type fakeConn struct {
	net.Conn
	local, remote net.Addr
}

func (f fakeConn) LocalAddr() net.Addr  { return f.local }
func (f fakeConn) RemoteAddr() net.Addr { return f.remote }

var (
	raw   = &corev3.TransportSocket{Name: "envoy.transport_sockets.raw_buffer"}
	down4 = upstream.ProxyProtocolData{Src: netip.MustParseAddrPort("203.0.113.7:51000"), Dst: netip.MustParseAddrPort("198.51.100.1:443")}
	down6 = upstream.ProxyProtocolData{Src: netip.MustParseAddrPort("[2001:db8::7]:51000"), Dst: netip.MustParseAddrPort("[2001:db8::1]:443")}
	own   = fakeConn{local: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 8080}}
)

func compile(t *testing.T, cfg *corev3.ProxyProtocolConfig) (*Socket, *stats.Store) {
	t.Helper()
	return compileTransport(t, &ppv3.ProxyProtocolUpstreamTransport{Config: cfg, TransportSocket: raw})
}

func compileTransport(t *testing.T, tr *ppv3.ProxyProtocolUpstreamTransport) (*Socket, *stats.Store) {
	t.Helper()
	store := stats.NewStore()
	s, err := Compile(tr, store.Scope("cluster.c."), nil, "c")
	if err != nil {
		t.Fatal(err)
	}
	return s, store
}

func TestV1Header(t *testing.T) {
	s, _ := compile(t, &corev3.ProxyProtocolConfig{Version: corev3.ProxyProtocolConfig_V1})
	for name, tc := range map[string]struct {
		d    upstream.ProxyProtocolData
		ok   bool
		want string
	}{
		"downstream IPv4":      {down4, true, "PROXY TCP4 203.0.113.7 198.51.100.1 51000 443\r\n"},
		"downstream IPv6":      {down6, true, "PROXY TCP6 2001:db8::7 2001:db8::1 51000 443\r\n"},
		"no downstream: own":   {upstream.ProxyProtocolData{}, false, "PROXY TCP4 127.0.0.1 127.0.0.2 40000 8080\r\n"},
		"mixed: source's kind": {upstream.ProxyProtocolData{Src: down6.Src, Dst: down4.Dst}, true, "PROXY TCP6 2001:db8::7 ::ffff:198.51.100.1 51000 443\r\n"},
	} {
		if got := string(s.Header(own, tc.d, tc.ok)); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
	if got := string(s.Header(fakeConn{local: &net.UnixAddr{Name: "a"}, remote: &net.UnixAddr{Name: "b"}}, upstream.ProxyProtocolData{}, false)); got != "PROXY UNKNOWN\r\n" {
		t.Errorf("unix: %q", got)
	}
}

func TestV2Header(t *testing.T) {
	s, store := compile(t, &corev3.ProxyProtocolConfig{Version: corev3.ProxyProtocolConfig_V2, AddedTlvs: []*corev3.TlvEntry{{Type: 0xE0, Value: []byte("ab")}}})
	sig := v2Signature
	want4 := sig + "\x21\x11\x00\x11" + "\xcb\x00\x71\x07" + "\xc6\x33\x64\x01" + "\xc7\x38" + "\x01\xbb" + "\xe0\x00\x02ab"
	if got := s.Header(own, down4, true); string(got) != want4 {
		t.Errorf("IPv4: %q\nwant %q", got, want4)
	}
	got6 := s.Header(own, down6, true)
	if !bytes.HasPrefix(got6, []byte(sig+"\x21\x21\x00\x29")) || len(got6) != 16+36+5 || !bytes.HasSuffix(got6, []byte("\xc7\x38\x01\xbb\xe0\x00\x02ab")) {
		t.Errorf("IPv6: %q", got6)
	}
	if got := s.Header(own, upstream.ProxyProtocolData{}, false); string(got) != sig+"\x20\x00\x00\x00" {
		t.Errorf("LOCAL: %q", got)
	}
	if v := store.Counter("cluster.c.upstream.proxyprotocol.v2_tlvs_exceed_max_length").Value(); v != 0 {
		t.Errorf("exceed = %d", v)
	}

	// The downstream's TLVs that pass_through_tlvs selects come first.
	pass, _ := compile(t, &corev3.ProxyProtocolConfig{Version: corev3.ProxyProtocolConfig_V2, AddedTlvs: []*corev3.TlvEntry{{Type: 0xE0, Value: []byte("ab")}},
		PassThroughTlvs: &corev3.ProxyProtocolPassThroughTLVs{MatchType: corev3.ProxyProtocolPassThroughTLVs_INCLUDE, TlvType: []uint32{0x05}}})
	withTLVs := down4
	withTLVs.TLVs = "\x05\x00\x01u\x06\x00\x01v"
	if got := pass.Header(own, withTLVs, true); !bytes.HasSuffix(got, []byte("\x01\xbb\x05\x00\x01u\xe0\x00\x02ab")) || got[15] != 12+4+5 {
		t.Errorf("pass-through: %q", got)
	}
	// Without pass_through_tlvs, none of them.
	if got := s.Header(own, withTLVs, true); string(got) != want4 {
		t.Errorf("no pass-through: %q", got)
	}

	// TLVs that cannot fit the 16-bit length are left out and counted.
	big, store := compile(t, &corev3.ProxyProtocolConfig{Version: corev3.ProxyProtocolConfig_V2, AddedTlvs: []*corev3.TlvEntry{
		{Type: 1, Value: bytes.Repeat([]byte{'x'}, 40000)}, {Type: 2, Value: bytes.Repeat([]byte{'y'}, 40000)},
	}})
	if got := big.Header(own, down4, true); len(got) != 16+12 || got[15] != 12 {
		t.Errorf("too long: %d bytes", len(got))
	}
	if v := store.Counter("cluster.c.upstream.proxyprotocol.v2_tlvs_exceed_max_length").Value(); v != 1 {
		t.Errorf("exceed = %d, want 1", v)
	}
}

func TestCompileRefusals(t *testing.T) {
	for want, cfg := range map[string]*ppv3.ProxyProtocolUpstreamTransport{
		"transport_socket: required":                                       {Config: &corev3.ProxyProtocolConfig{}},
		"config.pass_through_tlvs.tlv_type[0]: 300":                        {TransportSocket: raw, Config: &corev3.ProxyProtocolConfig{PassThroughTlvs: &corev3.ProxyProtocolPassThroughTLVs{MatchType: corev3.ProxyProtocolPassThroughTLVs_INCLUDE, TlvType: []uint32{300}}}},
		"config.added_tlvs[0].type: 256 is not":                            {TransportSocket: raw, Config: &corev3.ProxyProtocolConfig{AddedTlvs: []*corev3.TlvEntry{{Type: 256, Value: []byte("x")}}}},
		"config.added_tlvs[0]: one of value and format_string must be set": {TransportSocket: raw, Config: &corev3.ProxyProtocolConfig{AddedTlvs: []*corev3.TlvEntry{{Type: 1}}}},
		"config.added_tlvs[1]: only one of value and format_string":        {TransportSocket: raw, Config: &corev3.ProxyProtocolConfig{AddedTlvs: []*corev3.TlvEntry{{Type: 1, Value: []byte("x")}, {Type: 2, Value: []byte("y"), FormatString: text("z")}}}},
		"config.added_tlvs[0].format_string.text_format_source":            {TransportSocket: raw, Config: &corev3.ProxyProtocolConfig{AddedTlvs: []*corev3.TlvEntry{{Type: 1, FormatString: text("%NO_SUCH_OPERATOR%")}}}},
	} {
		if _, err := Compile(cfg, stats.NewStore().Scope(""), nil, "c"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

// text is an inline text format string.
func text(format string) *corev3.SubstitutionFormatString {
	return &corev3.SubstitutionFormatString{Format: &corev3.SubstitutionFormatString_TextFormatSource{
		TextFormatSource: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: format}},
	}}
}

// TestFormatStringTLVs checks that added TLVs with a format string are
// rendered per connection from the upstream connection's own addresses,
// after the static ones whatever their order in the list.
func TestFormatStringTLVs(t *testing.T) {
	s, _ := compile(t, &corev3.ProxyProtocolConfig{Version: corev3.ProxyProtocolConfig_V2, AddedTlvs: []*corev3.TlvEntry{
		{Type: 0xF0, FormatString: text("%DOWNSTREAM_LOCAL_ADDRESS%|%UPSTREAM_HOST%|%UPSTREAM_CLUSTER%")},
		{Type: 0xE0, Value: []byte("ab")},
	}})
	want := "\xe0\x00\x02ab" + "\xf0\x00\x20" + "127.0.0.1:40000|127.0.0.2:8080|c"
	got := s.Header(own, down4, true)
	if !bytes.HasSuffix(got, []byte(want)) || int(got[15]) != 12+len(want) {
		t.Errorf("got %q\nwant suffix %q", got, want)
	}
	other := fakeConn{local: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40001}, remote: own.remote}
	if got := s.Header(other, down4, true); !bytes.Contains(got, []byte("127.0.0.1:40001|")) {
		t.Errorf("second connection: %q", got)
	}
}

// TestAllowUnspecifiedAddress checks allow_unspecified_address: a
// downstream side with unspecified addresses is described as AF_UNSPEC
// (v2, TLVs kept) or UNKNOWN (v1); without it, the addresses are sent.
func TestAllowUnspecifiedAddress(t *testing.T) {
	null := upstream.ProxyProtocolData{Src: netip.MustParseAddrPort("0.0.0.0:0"), Dst: netip.MustParseAddrPort("0.0.0.0:0"), TLVs: "\x05\x00\x01u"}
	pass := &corev3.ProxyProtocolPassThroughTLVs{MatchType: corev3.ProxyProtocolPassThroughTLVs_INCLUDE_ALL}
	v2, _ := compileTransport(t, &ppv3.ProxyProtocolUpstreamTransport{TransportSocket: raw, AllowUnspecifiedAddress: true,
		Config: &corev3.ProxyProtocolConfig{Version: corev3.ProxyProtocolConfig_V2, PassThroughTlvs: pass}})
	if got, want := string(v2.Header(own, null, true)), v2Signature+"\x21\x00\x00\x04\x05\x00\x01u"; got != want {
		t.Errorf("v2: %q, want %q", got, want)
	}
	if got := v2.Header(own, down4, true); got[13] != 0x11 {
		t.Errorf("v2 with addresses: family %#x", got[13])
	}
	v1, _ := compileTransport(t, &ppv3.ProxyProtocolUpstreamTransport{TransportSocket: raw, AllowUnspecifiedAddress: true, Config: &corev3.ProxyProtocolConfig{}})
	if got := string(v1.Header(own, null, true)); got != "PROXY UNKNOWN\r\n" {
		t.Errorf("v1: %q", got)
	}
	off, _ := compile(t, &corev3.ProxyProtocolConfig{})
	if got := string(off.Header(own, null, true)); got != "PROXY TCP4 0.0.0.0 0.0.0.0 0 0\r\n" {
		t.Errorf("without: %q", got)
	}
}

// TestPoolKey checks that the downstream TLVs take part in the pool key
// only with tlv_as_pool_key.
func TestPoolKey(t *testing.T) {
	d := down4
	d.TLVs = "\x05\x00\x01u"
	off, _ := compile(t, &corev3.ProxyProtocolConfig{})
	if k := off.PoolKey(d); k != down4 {
		t.Errorf("without: %+v", k)
	}
	on, _ := compileTransport(t, &ppv3.ProxyProtocolUpstreamTransport{TransportSocket: raw, TlvAsPoolKey: true})
	if k := on.PoolKey(d); k != d {
		t.Errorf("with: %+v", k)
	}
}
