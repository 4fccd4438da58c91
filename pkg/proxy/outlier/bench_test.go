package outlier

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// BenchmarkPutHTTPResponseCode is the data path's cost per response with
// outlier detection on: a few atomics, no allocation.
func BenchmarkPutHTTPResponseCode(b *testing.B) {
	r := newRig(b, 4, &clusterv3.OutlierDetection{}, nil)
	m := r.hosts[0].Outlier()
	b.ReportAllocs()
	for b.Loop() {
		m.PutHTTPResponseCode(200)
	}
}
