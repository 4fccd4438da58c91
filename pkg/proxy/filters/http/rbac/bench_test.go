package rbac

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

// fixedHeaders is a request header map that allocates nothing on Get, as
// the connection manager's does not.
type fixedHeaders map[string]string

func (h fixedHeaders) Get(name string) (string, bool) {
	v, ok := h[name]
	return v, ok
}

// hundredPolicies is an ALLOW RBAC of 100 policies, policy-000 to
// policy-099: policy i allows GET and HEAD under /svc<i>/ to clients in
// 10.<i>.0.0/16 that send x-tenant: t<i>.
func hundredPolicies() string {
	var b strings.Builder
	b.WriteString(`{"rules":{"action":"ALLOW","policies":{`)
	for i := range 100 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"policy-%03d":{"permissions":[{"and_rules":{"rules":[`+
			`{"url_path":{"path":{"prefix":"/svc%d/"}}},`+
			`{"or_rules":{"rules":[{"header":{"name":":method","string_match":{"exact":"GET"}}},{"header":{"name":":method","string_match":{"exact":"HEAD"}}}]}}]}}],`+
			`"principals":[{"and_ids":{"ids":[{"remote_ip":{"address_prefix":"10.%d.0.0","prefix_len":16}},`+
			`{"header":{"name":"x-tenant","string_match":{"exact":"t%d"}}}]}}]}`, i, i, i, i)
	}
	b.WriteString(`}}}`)
	return b.String()
}

// BenchmarkAllow100Policies is a request allowed by the last of 100
// policies (every policy is tried) through the filter's DecodeHeaders:
// issue #15 asks for at most 1 µs and no allocation.
func BenchmarkAllow100Policies(b *testing.B) {
	f, c := compileFilter(b, hundredPolicies())
	s := httpfiltertest.NewStream("GET", "/svc99/items/7?full=1")
	s.Req.Headers = fixedHeaders{"x-tenant": "t99"}
	s.Remote = "10.99.3.4"
	s.StreamInfo = httpfilter.StreamInfo{RemoteAddress: "127.0.0.1:40000", DirectRemoteAddress: "127.0.0.1:40000", LocalAddress: "127.0.0.1:8080"}
	if f.DecodeHeaders(s) != httpfilter.Continue {
		b.Fatal("the request was denied")
	}
	// The CPU time of this thread, beside the wall time: a loaded
	// machine inflates the latter with the time spent waiting for a CPU.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0, cpuOK := threadCPU()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		f.DecodeHeaders(s)
	}
	b.StopTimer()
	if cpu1, ok := threadCPU(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
	if got := c.stats.Allowed.Value(); got < uint64(b.N) {
		b.Fatalf("allowed = %d after %d requests", got, b.N)
	}
}
