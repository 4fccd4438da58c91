package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Route actions: cluster_header and bodies from files", func() {
	It("sends each request to the cluster its header names, and answers direct responses with a file's body", func() {
		named := func(name string) string {
			return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				fmt.Fprint(w, "from "+name)
			}), false)
		}
		a, b := named("a"), named("b")
		dir := newDir()
		body := filepath.Join(dir, "maintenance.html")
		writeFile(body, "<h1>back soon</h1>\n")
		port := freePort()
		// cfg answers /maintenance with the file bodyFile.
		cfg := func(bodyFile string) string {
			return proxySpec{
				Port: port,
				HCM:  "{stat_prefix: actions}",
				Routes: `[{match: {prefix: /pick}, route: {cluster_header: X-Cluster, cluster_not_found_response_code: NOT_FOUND}},
					{match: {prefix: /maintenance}, direct_response: {status: 503, body: {filename: ` + strconv.Quote(bodyFile) + `}}}]`,
				Clusters: []proxyCluster{{Name: "a", Port: portNum(a)}, {Name: "b", Port: portNum(b)}},
			}.YAML()
		}
		Start(dir, cfg(body))
		client := &http.Client{Timeout: 5 * time.Second}
		for _, name := range []string{"a", "b", "a"} {
			r := httpDo(client, "GET", listenerURL(port, "/pick"), nil, http.Header{"X-Cluster": {name}})
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal("from " + name))
		}
		// A header naming no cluster, or none at all: the route's
		// cluster_not_found_response_code.
		Expect(httpDo(client, "GET", listenerURL(port, "/pick"), nil, http.Header{"X-Cluster": {"c"}}).Status).To(Equal(404))
		Expect(httpDo(client, "GET", listenerURL(port, "/pick"), nil, nil).Status).To(Equal(404))

		r := httpDo(client, "GET", listenerURL(port, "/maintenance"), nil, nil)
		Expect(r.Status).To(Equal(503))
		Expect(r.Body).To(Equal("<h1>back soon</h1>\n"))
		// Read once, at load: a later change does not show.
		writeFile(body, "changed")
		Expect(httpDo(client, "GET", listenerURL(port, "/maintenance"), nil, nil).Body).To(Equal("<h1>back soon</h1>\n"))

		By("refusing a body file that cannot be read, with its path")
		r2, _ := validate("bad.yaml", cfg(filepath.Join(dir, "missing.html")))
		Expect(r2.ExitCode).To(Equal(1))
		Expect(r2.Stderr).To(ContainSubstring("routes[1].direct_response.body.filename: open " + filepath.Join(dir, "missing.html")))
	})
})
