package lua

import "testing"

// BenchmarkCluster is one request's cost of the sandbox's script: a state
// from the pool, the handle, headers():get() and the returned name.
func BenchmarkCluster(b *testing.B) {
	p, _ := compile(b, sandbox, "example_cluster")
	r := request("/", "header_key", "fake")
	b.ReportAllocs()
	for b.Loop() {
		if p.Cluster(r) != "fake_cluster" {
			b.Fatal("wrong cluster")
		}
	}
}
