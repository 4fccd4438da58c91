package lb

import (
	"fmt"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// BenchmarkPick measures one host choice: plain round robin (equal
// weights, lock-free), the weighted schedule (a tiny lock) and a random
// draw between two priority levels, serially and from every processor.
func BenchmarkPick(b *testing.B) {
	weighted := func(n int) []*upstream.Host {
		hosts := make([]*upstream.Host, n)
		for i := range hosts {
			hosts[i] = &upstream.Host{Address: fmt.Sprint(i), Weight: uint32(i%100 + 1)}
		}
		return hosts
	}
	cases := map[string][][]*upstream.Host{
		"round-robin-10":    {makeHosts("a", "b", "c", "d", "e", "f", "g", "h", "i", "j")},
		"weighted-10":       {weighted(10)},
		"weighted-1000":     {weighted(1000)},
		"two-priorities-70": {makeHosts("a", "b!"), makeHosts("c", "d")},
	}
	for name, priorities := range cases {
		b.Run(name, func(b *testing.B) {
			bal := New(priorities, Config{PanicThreshold: DefaultPanicThreshold})
			b.ReportAllocs()
			for b.Loop() {
				bal.Pick(nil)
			}
		})
		b.Run(name+"-parallel", func(b *testing.B) {
			bal := New(priorities, Config{PanicThreshold: DefaultPanicThreshold})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					bal.Pick(nil)
				}
			})
		})
	}
}
