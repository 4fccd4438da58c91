package lb

import (
	"fmt"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// BenchmarkPickByLocality measures one host choice with locality-weighted
// balancing, zone-aware routing and subsets, 1,000 hosts over 4 zones.
func BenchmarkPickByLocality(b *testing.B) {
	var hosts, local []*upstream.Host
	for i := range 1000 {
		zone := string(rune('a' + i%4))
		hosts = append(hosts, withMetadata(b, &upstream.Host{Address: fmt.Sprint(i), Weight: 1, LocalityWeight: uint32(i%4 + 1),
			Locality: upstream.Locality{Zone: zone}}, map[string]any{"stage": fmt.Sprint(i % 10)}))
		if i < 40 {
			local = append(local, &upstream.Host{Locality: upstream.Locality{Zone: string(rune('a' + i%3))}})
		}
	}
	zone := &ZoneConfig{LocalHosts: local, RoutingEnabled: 100, MinClusterSize: 6}
	mine := &upstream.Locality{Zone: "a"}
	subsets := &SubsetConfig{Fallback: FallbackAnyEndpoint, Selectors: []SubsetSelector{{Keys: []string{"stage"}}}}
	ctx := match(b, map[string]any{"stage": "3"})
	cases := map[string]func() func(){
		"locality-weighted-1000": func() func() {
			bal := New([][]*upstream.Host{hosts}, Config{LocalityWeighted: true})
			return func() { bal.Pick(nil) }
		},
		"zone-aware-1000": func() func() {
			bal := New([][]*upstream.Host{hosts}, Config{Zone: zone, Local: mine})
			if bal.zone == nil {
				b.Fatal("no zone routing")
			}
			return func() { bal.Pick(nil) }
		},
		"subset-1000": func() func() {
			s := NewSubsetBalancer([][]*upstream.Host{hosts}, subsets, Config{}, nil)
			return func() { s.Pick(ctx) }
		},
	}
	for name, build := range cases {
		b.Run(name, func(b *testing.B) {
			pick := build()
			b.ReportAllocs()
			for b.Loop() {
				pick()
			}
		})
	}
	b.Run("subset-build-1000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			NewSubsetBalancer([][]*upstream.Host{hosts}, subsets, Config{}, nil)
		}
	})
}
