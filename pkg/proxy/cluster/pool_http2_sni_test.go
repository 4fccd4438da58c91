package cluster

import (
	"fmt"
	"net/http"
	"net/netip"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

func TestSNIPoolsBounded(t *testing.T) {
	p := &sniPools{c: &Cluster{settings: &settings{}}, byKey: map[poolKey]*http.Transport{}}
	first := poolKey{tls: tlsconfig.Override{ServerName: "0.example.com"}}
	t0 := p.transport(first)
	if p.transport(first) != t0 {
		t.Fatal("the same server name got another pool")
	}
	for i := 1; i <= maxSNIPools; i++ {
		p.transport(poolKey{tls: tlsconfig.Override{ServerName: fmt.Sprintf("%d.example.com", i)}})
	}
	if len(p.byKey) != maxSNIPools || len(p.order) != maxSNIPools {
		t.Fatalf("%d pools (%d in order), want at most %d", len(p.byKey), len(p.order), maxSNIPools)
	}
	if _, kept := p.byKey[first]; kept {
		t.Fatal("the oldest pool was kept past the bound")
	}
}

// Requests from different original sources (or marks) never share an
// HTTP/2 pool; requests from the same one do.
func TestSourcePoolsApart(t *testing.T) {
	p := &sniPools{c: &Cluster{settings: &settings{}}, byKey: map[poolKey]*http.Transport{}}
	a := poolKey{src: upstream.Source{Addr: netip.MustParseAddr("10.0.0.1")}}
	b := poolKey{src: upstream.Source{Addr: netip.MustParseAddr("10.0.0.2")}}
	marked := poolKey{src: upstream.Source{Addr: netip.MustParseAddr("10.0.0.1"), Mark: 7}}
	ta := p.transport(a)
	if p.transport(a) != ta {
		t.Fatal("the same source got another pool")
	}
	if p.transport(b) == ta || p.transport(marked) == ta {
		t.Fatal("another source (or mark) shares a pool")
	}
}
