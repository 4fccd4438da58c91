package e2e

import (
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("An optional HTTP filter (is_optional) that Outrigger does not have", func() {
	// WebAssembly is an extension Outrigger knows of and refuses; the Go
	// filter's type is not even linked into the binary.
	wasm := `{name: envoy.filters.http.wasm, is_optional: true, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm}}`
	golang := `{name: envoy.filters.http.golang, is_optional: true, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config, library_id: x}}`

	It("is left out of the chain with Envoy's warning, and traffic flows", func() {
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("via " + r.Header.Get("x-added")))
		}), false)
		port := freePort()
		// A filter that is there runs, optional or not.
		mutation := `{name: envoy.filters.http.header_mutation, is_optional: true, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.header_mutation.v3.HeaderMutation,
			mutations: {request_mutations: [{append: {header: {key: x-added, value: "yes"}}}]}}}`
		cfg := proxySpec{
			Port:     port,
			Filters:  "[" + wasm + ", " + golang + ", " + mutation + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
		}.YAML()

		r, _ := validate("optional.yaml", cfg)
		Expect(r.ExitCode).To(Equal(0), r.Stderr)

		s := Start(newDir(), cfg)
		s.WaitLive()
		resp := httpDo(rawClients()["HTTP/1.1"], http.MethodGet, listenerURL(port, "/"), nil, nil)
		Expect(resp.Status).To(Equal(http.StatusOK))
		Expect(resp.Body).To(Equal("via yes"))
		Expect(s.Stderr()).To(ContainSubstring("Didn't find a registered config factory for the optional http filter envoy.filters.http.wasm"))
		Expect(s.Stderr()).To(ContainSubstring("Didn't find a registered config factory for the optional http filter envoy.filters.http.golang"))
	})

	It("is refused with its path when it is not optional", func() {
		cfg := proxySpec{
			Port:     freePort(),
			Filters:  "[" + strings.Replace(wasm, "is_optional: true", "is_optional: false", 1) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: 1}},
		}.YAML()
		r, _ := validate("required.yaml", cfg)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("http_filters[0].typed_config"))
		Expect(r.Stderr).To(ContainSubstring("envoy.filters.http.wasm: WebAssembly is not embedded"))
	})
})
