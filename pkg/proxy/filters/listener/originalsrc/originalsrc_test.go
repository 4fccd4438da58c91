package originalsrc

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	osv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/original_src/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

func TestCompile(t *testing.T) {
	if _, err := (Factory{}).Compile(&osv3.OriginalSrc{Mark: 5}, listenerfilter.Context{}); err != nil {
		t.Fatalf("mark: %v", err)
	}
	_, err := Factory{}.Compile(&osv3.OriginalSrc{BindPort: true}, listenerfilter.Context{})
	if err == nil || !strings.HasPrefix(err.Error(), "bind_port: ") {
		t.Fatalf("bind_port: error %v, want one naming bind_port", err)
	}
}

// fakeConn is an accepted connection with the given peer.
type fakeConn struct {
	net.Conn
	remote net.Addr
}

func (c fakeConn) RemoteAddr() net.Addr { return c.remote }
func (c fakeConn) LocalAddr() net.Addr  { return &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 80} }

func TestOnAccept(t *testing.T) {
	tests := map[string]struct {
		remote net.Addr
		want   upstream.Source
		set    bool
	}{
		"IPv4":        {&net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 40000}, upstream.Source{Addr: netip.MustParseAddr("192.0.2.7"), Mark: 9}, true},
		"IPv6":        {&net.TCPAddr{IP: net.ParseIP("2001:db8::7"), Port: 40000}, upstream.Source{Addr: netip.MustParseAddr("2001:db8::7"), Mark: 9}, true},
		"IPv4-mapped": {&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.8"), Port: 1}, upstream.Source{Addr: netip.MustParseAddr("192.0.2.8"), Mark: 9}, true},
		"unix":        {&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, upstream.Source{}, false},
	}
	f, err := Factory{}.Compile(&osv3.OriginalSrc{Mark: 9}, listenerfilter.Context{})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := listenerfilter.NewSocket(fakeConn{remote: tc.remote})
			if err := f.OnAccept(s); err != nil {
				t.Fatal(err)
			}
			got, set := s.UpstreamSource()
			if got != tc.want || set != tc.set {
				t.Errorf("source %+v (set %v), want %+v (%v)", got, set, tc.want, tc.set)
			}
		})
	}
}
