package e2e

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Virtual host include_is_timeout_retry_header", func() {
	It("tells the upstream whether a retry was started by a per-try timeout", func() {
		var mu sync.Mutex
		seen := map[string]bool{}
		up := portNum(httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := r.URL.Path
			mu.Lock()
			again := seen[key]
			seen[key] = true
			mu.Unlock()
			if !again {
				if key == "/slow" {
					// Held until the proxy gives the attempt up.
					<-r.Context().Done()
					return
				}
				w.WriteHeader(503)
				return
			}
			fmt.Fprintf(w, "is-timeout-retry=%q", r.Header.Values("X-Envoy-Is-Timeout-Retry"))
		}), false))
		port := freePort()
		Start(newDir(), proxySpec{
			Port:        port,
			VirtualHost: `{include_is_timeout_retry_header: true, retry_policy: {retry_on: "5xx", num_retries: 1, per_try_timeout: 0.3s}}`,
			Clusters:    []proxyCluster{{Name: "up", Port: up}},
		}.YAML())
		client := &http.Client{Timeout: 10 * time.Second}
		r := httpDo(client, "GET", listenerURL(port, "/slow"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal(`is-timeout-retry=["true"]`))
		r = httpDo(client, "GET", listenerURL(port, "/fails"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal(`is-timeout-retry=["false"]`))
	})
})
