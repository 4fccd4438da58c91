package cluster

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

func TestSNIPoolsBounded(t *testing.T) {
	p := &sniPools{c: &Cluster{settings: &settings{}}, byKey: map[tlsconfig.Override]*http.Transport{}}
	first := tlsconfig.Override{ServerName: "0.example.com"}
	t0 := p.transport(first)
	if p.transport(first) != t0 {
		t.Fatal("the same server name got another pool")
	}
	for i := 1; i <= maxSNIPools; i++ {
		p.transport(tlsconfig.Override{ServerName: fmt.Sprintf("%d.example.com", i)})
	}
	if len(p.byKey) != maxSNIPools || len(p.order) != maxSNIPools {
		t.Fatalf("%d pools (%d in order), want at most %d", len(p.byKey), len(p.order), maxSNIPools)
	}
	if _, kept := p.byKey[first]; kept {
		t.Fatal("the oldest pool was kept past the bound")
	}
}
