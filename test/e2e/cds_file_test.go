package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// cdsFileResponse is a DiscoveryResponse (YAML) with one cluster, svc,
// whose one endpoint is upstream.
func cdsFileResponse(version, upstream string) string {
	return fmt.Sprintf(`version_info: %q
resources:
- "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
  name: svc
  connect_timeout: 1s
  load_assignment: {cluster_name: svc, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}
`, version, portNum(upstream))
}

var _ = Describe("CDS: clusters discovered from a file", func() {
	It("serves the file's clusters to the file's listeners (Envoy's dynamic-config-fs sandbox) and follows a new file", func() {
		answer := func(body string) string {
			return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) }), false)
		}
		a, b := answer("A"), answer("B")
		port := freePort()
		dir := filepath.Join(newDir(), "xds")
		writeFile(filepath.Join(dir, "cds.yaml"), cdsFileResponse("c1", a))
		writeFile(filepath.Join(dir, "lds.yaml"), fmt.Sprintf(`version_info: "l1"
resources:
- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: web
  address: {socket_address: {address: 127.0.0.1, port_value: %d}}
  filter_chains:
  - filters:
    - name: envoy.filters.network.http_connection_manager
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
        stat_prefix: web
        route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: svc}}]}]}
        http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]
`, port))
		cdsPath, err := yamlQuote(filepath.Join(dir, "cds.yaml"))
		Expect(err).NotTo(HaveOccurred())
		ldsPath, err := yamlQuote(filepath.Join(dir, "lds.yaml"))
		Expect(err).NotTo(HaveOccurred())
		s := Start(newDir(), `node: {cluster: test-cluster, id: test-id}
admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
dynamic_resources:
  cds_config: {resource_api_version: V3, path_config_source: {path: `+cdsPath+`}}
  lds_config: {resource_api_version: V3, path_config_source: {path: `+ldsPath+`}}
`)
		waitLive(s)
		client := &http.Client{}
		Expect(httpDo(client, "GET", listenerURL(port, "/"), nil, nil).Body).To(Equal("A"))
		for name, want := range map[string]string{
			"cluster_manager.cds.update_success": "1",
			"cluster_manager.cds.version_text":   `"c1"`,
			"cluster_manager.active_clusters":    "1",
		} {
			Expect(statValue(s, name)).To(Equal(want), name)
		}
		Expect(s.Get("/clusters").Body).To(ContainSubstring("svc::added_via_api::true"))

		// A new file moved into place changes the cluster.
		tmp := filepath.Join(dir, ".cds.tmp")
		Expect(os.WriteFile(tmp, []byte(cdsFileResponse("c2", b)), 0o644)).To(Succeed())
		Expect(os.Rename(tmp, filepath.Join(dir, "cds.yaml"))).To(Succeed())
		waitStat(s, "cluster_manager.cds.version_text", `"c2"`)
		Eventually(func() string { return httpDo(client, "GET", listenerURL(port, "/"), nil, nil).Body }).Should(Equal("B"))
		Expect(s.Get("/config_dump?resource=dynamic_active_clusters").Body).To(ContainSubstring(`"version_info": "c2"`))

		// A cluster that does not check is rejected with the rest of
		// the file, and changes nothing.
		Expect(os.WriteFile(tmp, []byte(strings.Replace(cdsFileResponse("c3", a), "connect_timeout: 1s", "connect_timeout: -1s", 1)), 0o644)).To(Succeed())
		Expect(os.Rename(tmp, filepath.Join(dir, "cds.yaml"))).To(Succeed())
		waitStat(s, "cluster_manager.cds.update_rejected", "1")
		Expect(statValue(s, "cluster_manager.cds.version_text")).To(Equal(`"c2"`))
		Expect(httpDo(client, "GET", listenerURL(port, "/"), nil, nil).Body).To(Equal("B"))
	})

	It("refuses to start when the clusters' file does not exist, naming the field", func() {
		r, _ := validate("cds.yaml", `admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}
dynamic_resources: {cds_config: {path_config_source: {path: /nonexistent/cds.yaml}}}
`)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("dynamic_resources.cds_config.path_config_source.path: paths must refer to an existing path in the system: '/nonexistent/cds.yaml' does not exist"))
	})
})
