package xds

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
)

// BenchmarkEndpointReuseOneEndpointChange decodes a load assignment of
// 10,000 endpoints with one endpoint added, then without it, alternately,
// as a state-of-the-world EDS stream sends a one-endpoint change: each op
// is one response's assignment (begin, decode, end).
func BenchmarkEndpointReuseOneEndpointChange(b *testing.B) {
	var wire [2][]byte
	for i, n := range []int{10001, 10000} {
		var err error
		if wire[i], err = proto.Marshal(testAssignment(n, func(int) uint32 { return 8080 })); err != nil {
			b.Fatal(err)
		}
	}
	var r endpointReuse
	dec := bootstrap.Decoder{}
	decode := func(w []byte) {
		r.begin()
		if _, ok := r.decode(dec, 2, w); !ok {
			b.Fatal("not decoded by parts")
		}
		r.end()
	}
	decode(wire[1])
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		decode(wire[i%2])
	}
}
