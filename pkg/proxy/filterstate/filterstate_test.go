package filterstate

import (
	"net/netip"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

func TestFactories(t *testing.T) {
	for _, c := range []struct {
		name, data string
		want       accesslog.FilterStateObject
		ok         bool
	}{
		{GenericString, "x", String("x"), true},
		{netfilter.ClusterStateKey, "c", String("c"), true},
		{GenericHashableString, "h", HashableString("h"), true},
		{netfilter.DynamicPortStateKey, "443", UInt32(443), true},
		{netfilter.DynamicPortStateKey, "-1", nil, false},
		{netfilter.DynamicPortStateKey, "4294967296", nil, false},
		{OriginalDstAddressKey, "[::1]:80", Address(netip.MustParseAddrPort("[::1]:80")), true},
		{OriginalDstAddressKey, "10.0.0.1", nil, false},
	} {
		f, found := FactoryOf(c.name)
		if !found {
			t.Fatalf("%s: no factory", c.name)
		}
		got, ok := f(c.data)
		if ok != c.ok || got != c.want {
			t.Errorf("%s(%q) = %#v %v, want %#v %v", c.name, c.data, got, ok, c.want, c.ok)
		}
	}
	if _, found := FactoryOf("envoy.network.upstream_server_name"); found {
		t.Error("a key Outrigger reads nowhere has a factory")
	}
}

// connState is a connection's filter state.
type connState map[string]any

func (c connState) FilterState(key string) (any, bool) {
	v, ok := c[key]
	return v, ok
}

// TestAccessLogShowsConnectionObjects renders %FILTER_STATE% of the
// objects in each form, read through to the connection's filter state.
func TestAccessLogShowsConnectionObjects(t *testing.T) {
	f, err := accesslog.CompileSubstitution(&corev3.SubstitutionFormatString{Format: &corev3.SubstitutionFormatString_TextFormatSource{TextFormatSource: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{
		InlineString: "%FILTER_STATE(s)% %FILTER_STATE(s:PLAIN)% %FILTER_STATE(n)% %FILTER_STATE(a:PLAIN)% %FILTER_STATE(a:FIELD:ip)% %FILTER_STATE(a:FIELD:port)% %FILTER_STATE(own:PLAIN)% %FILTER_STATE(missing)%",
	}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &accesslog.Entry{
		FilterState: map[string]accesslog.FilterStateObject{"own": String("request"), "s": String("request wins")},
		ConnFilterState: connState{
			"s": String("conn"), "n": UInt32(7), "a": Address(netip.MustParseAddrPort("10.0.0.1:8080")),
			"own": String("shadowed"),
		},
	}
	got := string(f.Append(nil, e))
	want := `"request wins" request wins 7 10.0.0.1:8080 10.0.0.1 8080 request -`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestAddressMatch(t *testing.T) {
	m, err := CompileAddressMatch(nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Match(Address(netip.MustParseAddrPort("10.0.0.1:1"))) {
		t.Error("no range matched an address")
	}
}

func TestHashableString(t *testing.T) {
	h1, ok1 := HashableString("a").Hash()
	h2, _ := HashableString("b").Hash()
	if !ok1 || h1 == h2 {
		t.Errorf("hashes %d %d", h1, h2)
	}
	var o any = String("a")
	if _, ok := o.(Hashable); ok {
		t.Error("a plain string is hashable")
	}
}
