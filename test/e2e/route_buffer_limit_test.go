package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// failOnceUpstream answers 503 to the first attempt of each request (by
// its x-key header) and then 200 with the method and body length it
// received.
func failOnceUpstream() int {
	GinkgoHelper()
	var mu sync.Mutex
	seen := map[string]bool{}
	return portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		key := r.Header.Get("X-Key")
		mu.Lock()
		again := seen[key]
		seen[key] = true
		mu.Unlock()
		if !again {
			w.WriteHeader(503)
			return
		}
		fmt.Fprintf(w, "%s %d", r.Method, len(b))
	}), false))
}

var _ = Describe("Route request body buffer limits: request_body_buffer_limit, per_request_buffer_limit_bytes", func() {
	It("retries bodies up to the route's limit, beyond the connection's, and gives up above it", func() {
		up := failOnceUpstream()
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port:     port,
			Listener: `{per_connection_buffer_limit_bytes: 4096}`,
			Routes: `[{match: {prefix: /large}, request_body_buffer_limit: 100000, route: {cluster: up}},
				{match: {prefix: /small}, per_request_buffer_limit_bytes: 1000, route: {cluster: up}},
				{match: {prefix: /}, route: {cluster: up}}]`,
			VirtualHost: `{retry_policy: {retry_on: 5xx, num_retries: 1}}`,
			Clusters:    []proxyCluster{{Name: "up", Port: up}},
		}.YAML())
		client := &http.Client{Timeout: 10 * time.Second}
		put := func(path string, size int) Response {
			GinkgoHelper()
			return httpDo(client, "PUT", listenerURL(port, path), strings.NewReader(strings.Repeat("x", size)), http.Header{"X-Key": {path}})
		}

		r := put("/large", 20000)
		Expect(r.Status).To(Equal(200), "retried: the route keeps 100000 bytes")
		Expect(r.Body).To(Equal("PUT 20000"))
		Expect(statInt(s, "cluster.up.retry_or_shadow_abandoned")).To(Equal(int64(0)))

		r = put("/default", 20000)
		Expect(r.Status).To(Equal(503), "the connection keeps 4096 bytes")
		Expect(statInt(s, "cluster.up.retry_or_shadow_abandoned")).To(Equal(int64(1)))

		r = put("/small", 2000)
		Expect(r.Status).To(Equal(503), "per_request_buffer_limit_bytes lowers the connection's limit")
		Expect(statInt(s, "cluster.up.retry_or_shadow_abandoned")).To(Equal(int64(2)))

		r = put("/small/2", 900)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("PUT 900"))
	})
})
