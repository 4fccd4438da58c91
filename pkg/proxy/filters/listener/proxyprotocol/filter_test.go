package proxyprotocol

import (
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	ppv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/proxy_protocol/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter/listenerfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// tlv encodes one TLV.
func tlv(t byte, value string) []byte {
	return append(binary.BigEndian.AppendUint16([]byte{t}, uint16(len(value))), value...)
}

// sent returns the server side of a loopback connection whose client has
// sent b, ready for the filter.
func sent(t *testing.T, b []byte) *listenerfilter.Socket {
	t.Helper()
	c, s := listenerfiltertest.Pair(t, 5*time.Second)
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	return s
}

func compileFilter(t *testing.T, cfg *ppv3.ProxyProtocol, store *stats.Store) listenerfilter.Filter {
	t.Helper()
	f, err := Factory{}.Compile(cfg, listenerfilter.Context{Stats: store})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRulesPutTLVsInDynamicMetadata(t *testing.T) {
	cfg := &ppv3.ProxyProtocol{Rules: []*ppv3.ProxyProtocol_Rule{
		{TlvType: 0xE0, OnTlvPresent: &ppv3.ProxyProtocol_KeyValuePair{Key: "tenant"}},
		{TlvType: 0xE1, OnTlvPresent: &ppv3.ProxyProtocol_KeyValuePair{MetadataNamespace: "custom", Key: "raw", ValueStringEncoding: ppv3.ProxyProtocol_KeyValuePair_BASE64}},
		{TlvType: 0xE2, OnTlvPresent: &ppv3.ProxyProtocol_KeyValuePair{Key: "bytes"}},
	}, PassThroughTlvs: &corev3.ProxyProtocolPassThroughTLVs{MatchType: corev3.ProxyProtocolPassThroughTLVs_INCLUDE, TlvType: []uint32{0x05, 0xE1}}}
	store := stats.NewStore()
	f := compileFilter(t, cfg, store)
	var tlvs []byte
	tlvs = append(tlvs, tlv(0xE0, "acme")...)
	tlvs = append(tlvs, tlv(0xE0, "second")...) // the first of a type wins
	tlvs = append(tlvs, tlv(0xE1, "\x00\xff")...)
	tlvs = append(tlvs, tlv(0xE2, "a\xffb")...)
	tlvs = append(tlvs, tlv(0x05, "unique-id")...) // no rule: skipped
	hdr := v2Header(0x21, 0x11, inet4Block(src4, dst4, tlvs...))
	s := sent(t, append(hdr, "payload"...))
	if err := f.OnAccept(s); err != nil {
		t.Fatal(err)
	}
	fm := s.DynamicMetadata().GetFilterMetadata()
	if got := fm[defaultNamespace].GetFields()["tenant"].GetStringValue(); got != "acme" {
		t.Errorf("tenant = %q, want acme", got)
	}
	if got := fm["custom"].GetFields()["raw"].GetStringValue(); got != "AP8=" {
		t.Errorf("raw = %q, want AP8=", got)
	}
	if got := fm[defaultNamespace].GetFields()["bytes"].GetStringValue(); got != "a!b" {
		t.Errorf("bytes = %q, want a!b", got)
	}
	if len(fm) != 2 || len(fm[defaultNamespace].GetFields()) != 2 {
		t.Errorf("metadata %v", fm)
	}
	if s.RemoteAddr().String() != src4.String() {
		t.Errorf("remote %v", s.RemoteAddr())
	}
	rest := make([]byte, 7)
	if _, err := io.ReadFull(s.NetConn(), rest); err != nil || string(rest) != "payload" {
		t.Errorf("after the header: %q, %v", rest, err)
	}
	if got := store.Counter("proxy_proto.versions.v2.found").Value(); got != 1 {
		t.Errorf("found = %d", got)
	}
	// pass_through_tlvs keeps the TLVs of its types, in their order, with
	// the header's addresses, for the upstream's header.
	pp, ok := s.ProxyProtocol()
	if want := string(tlv(0xE1, "\x00\xff")) + string(tlv(0x05, "unique-id")); !ok || pp.Src != src4 || pp.Dst != dst4 || pp.TLVs != want {
		t.Errorf("proxy protocol state %+v %v", pp, ok)
	}

	// A LOCAL header keeps the connection's own addresses, and no TLVs.
	local := sent(t, v2Header(0x20, 0x00, tlv(0x05, "x")))
	if err := f.OnAccept(local); err != nil {
		t.Fatal(err)
	}
	if pp, ok := local.ProxyProtocol(); !ok || pp.Src.String() != local.RemoteAddr().String() || pp.TLVs != "" {
		t.Errorf("LOCAL: %+v %v", pp, ok)
	}
}

func TestMalformedTLVRefusesTheConnection(t *testing.T) {
	store := stats.NewStore()
	f := compileFilter(t, &ppv3.ProxyProtocol{Rules: []*ppv3.ProxyProtocol_Rule{{TlvType: 0xE0, OnTlvPresent: &ppv3.ProxyProtocol_KeyValuePair{Key: "k"}}}}, store)
	for name, tlvs := range map[string][]byte{
		"value past the block": append(tlv(0xE0, "ok"), 0xE0, 0x00, 0x09, 'x'),
		"no room for a length": append(tlv(0xE0, "ok"), 0xE0, 0x00),
	} {
		s := sent(t, v2Header(0x21, 0x11, inet4Block(src4, dst4, tlvs...)))
		if err := f.OnAccept(s); !errors.Is(err, listenerfilter.ErrRejected) {
			t.Errorf("%s: %v, want rejected", name, err)
		}
		if s.DynamicMetadata() != nil {
			t.Errorf("%s: metadata %v", name, s.DynamicMetadata())
		}
	}
	for name, want := range map[string]uint64{"proxy_proto.versions.v2.error": 2, "downstream_cx_proxy_proto_error": 2, "proxy_proto.versions.v2.found": 0} {
		if got := store.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

func TestCompileRefusals(t *testing.T) {
	for name, cfg := range map[string]*ppv3.ProxyProtocol{
		"rules[0].tlv_type":           {Rules: []*ppv3.ProxyProtocol_Rule{{TlvType: 256, OnTlvPresent: &ppv3.ProxyProtocol_KeyValuePair{Key: "k"}}}},
		"rules[0].on_tlv_present.key": {Rules: []*ppv3.ProxyProtocol_Rule{{TlvType: 1, OnTlvPresent: &ppv3.ProxyProtocol_KeyValuePair{}}}},
		"tlv_location":                {TlvLocation: ppv3.ProxyProtocol_FILTER_STATE},
	} {
		_, err := Factory{}.Compile(cfg, listenerfilter.Context{Stats: stats.NewStore()})
		if err == nil || !containsPath(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func containsPath(msg, path string) bool {
	return len(msg) >= len(path) && msg[:len(path)] == path
}
