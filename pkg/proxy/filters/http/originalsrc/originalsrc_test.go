package originalsrc

import (
	"net/netip"
	"testing"

	osv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/original_src/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

func TestDecodeHeaders(t *testing.T) {
	tests := map[string]struct {
		remote string
		want   upstream.Source
	}{
		"IPv4":        {"192.0.2.7", upstream.Source{Addr: netip.MustParseAddr("192.0.2.7"), Mark: 42}},
		"IPv6":        {"2001:db8::7", upstream.Source{Addr: netip.MustParseAddr("2001:db8::7"), Mark: 42}},
		"IPv4-mapped": {"::ffff:192.0.2.8", upstream.Source{Addr: netip.MustParseAddr("192.0.2.8"), Mark: 42}},
		// A unix socket's client has no IP address: nothing is set.
		"not IP": {"", upstream.Source{}},
	}
	cfg, err := Factory{}.Compile(&osv3.OriginalSrc{Mark: 42}, httpfilter.Context{})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := httpfiltertest.NewStream("GET", "/")
			s.Remote = tc.remote
			if st := cfg.NewFilter().(httpfilter.Decoder).DecodeHeaders(s); st != httpfilter.Continue {
				t.Fatalf("status %v, want Continue", st)
			}
			if s.UpstreamSource != tc.want {
				t.Errorf("source %+v, want %+v", s.UpstreamSource, tc.want)
			}
		})
	}
}
