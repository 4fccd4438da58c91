package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	// The bootstrap fixtures' typed_configs: linked so that the test can
	// re-encode them as JSON, text and binary proto.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"
)

// encodeBootstrap re-encodes a YAML bootstrap in the format that a file
// extension selects. JSON is written with protojson's default lowerCamel
// names, so the loader's acceptance of both spellings is exercised too.
func encodeBootstrap(yamlText, ext string) []byte {
	GinkgoHelper()
	if ext == ".yaml" || ext == ".yml" {
		return []byte(yamlText)
	}
	js, err := yaml.YAMLToJSON([]byte(yamlText))
	Expect(err).NotTo(HaveOccurred())
	b := &bootstrapv3.Bootstrap{}
	Expect(protojson.Unmarshal(js, b)).To(Succeed())
	var out []byte
	switch ext {
	case ".json":
		out, err = protojson.MarshalOptions{Multiline: true}.Marshal(b)
	case ".pb_text":
		out, err = prototext.MarshalOptions{Multiline: true}.Marshal(b)
	case ".pb":
		out, err = proto.Marshal(b)
	default:
		Fail("no encoder for " + ext)
	}
	Expect(err).NotTo(HaveOccurred())
	return out
}

// validate runs --mode validate on a bootstrap written to a file named name.
func validate(name, content string, args ...string) (Result, string) {
	GinkgoHelper()
	path := filepath.Join(newDir(), name)
	writeFile(path, content)
	return Run(append([]string{"--mode", "validate", "-c", path}, args...)...), path
}

var _ = Describe("Bootstrap", func() {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

	DescribeTable("is served from every file format",
		func(ext string) {
			port := freePort()
			body := "served from " + ext
			cfg := Bootstrap{Listeners: []Listener{helloListener("l", port, body)}}.YAML()
			dir := newDir()
			s := Launch(dir, "bootstrap"+ext, string(encodeBootstrap(cfg, ext)))
			s.WaitForAdmin()
			// The admin listener comes up before the others.
			s.WaitLive()
			r := httpDo(client, http.MethodGet, listenerURL(port, "/hello"), nil, nil)
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(Equal(body))
		},
		Entry("YAML", ".yaml"),
		Entry("YAML, short extension", ".yml"),
		Entry("JSON", ".json"),
		Entry("text proto", ".pb_text"),
		Entry("binary proto", ".pb"),
	)

	It("is served from --config-yaml alone", func() {
		port := freePort()
		cfg := Bootstrap{Listeners: []Listener{helloListener("inline", port, "inline")}}.YAML()
		s := Launch(newDir(), "", "", "--config-yaml", cfg)
		// The listeners are bound after the admin: wait for both.
		s.WaitForAdmin()
		s.WaitLive()
		r := httpDo(client, http.MethodGet, listenerURL(port, "/hello"), nil, nil)
		Expect(r.Body).To(Equal("inline"))
	})

	It("merges --config-yaml over the file: repeated fields append, scalars override", func() {
		filePort, yamlPort := freePort(), freePort()
		file := Bootstrap{
			Node:      &Node{ID: "from-file", Cluster: "file-cluster", Zone: "file-zone"},
			Listeners: []Listener{helloListener("from-file", filePort, "file listener")},
		}.YAML()
		overlay := fmt.Sprintf(`node: {id: from-yaml}
static_resources:
  listeners:
  - name: from-yaml
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: overlay
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {path: /hello}
                direct_response: {status: 200, body: {inline_string: yaml listener}}
          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
`, yamlPort)
		s := Start(newDir(), file, "--config-yaml", overlay)

		Expect(httpDo(client, http.MethodGet, listenerURL(filePort, "/hello"), nil, nil).Body).To(Equal("file listener"))
		Expect(httpDo(client, http.MethodGet, listenerURL(yamlPort, "/hello"), nil, nil).Body).To(Equal("yaml listener"))
		node := s.ServerInfo().GetNode()
		Expect(node.GetId()).To(Equal("from-yaml"))
		Expect(node.GetCluster()).To(Equal("file-cluster"))
		Expect(node.GetLocality().GetZone()).To(Equal("file-zone"))
	})

	It("lets --service-cluster, --service-node and --service-zone override the node", func() {
		cfg := Bootstrap{Node: &Node{ID: "file-id", Cluster: "file-cluster", Zone: "file-zone"}}.YAML()
		s := Start(newDir(), cfg, "--service-node", "cli-id", "--service-cluster", "cli-cluster", "--service-zone", "cli-zone")
		info := s.ServerInfo()
		Expect(info.GetNode().GetId()).To(Equal("cli-id"))
		Expect(info.GetNode().GetCluster()).To(Equal("cli-cluster"))
		Expect(info.GetNode().GetLocality().GetZone()).To(Equal("cli-zone"))
		opts := info.GetCommandLineOptions()
		Expect(opts.GetServiceNode()).To(Equal("cli-id"))
		Expect(opts.GetServiceCluster()).To(Equal("cli-cluster"))
		Expect(opts.GetServiceZone()).To(Equal("cli-zone"))
	})

	Describe("unknown fields", func() {
		// withUnknown returns a bootstrap with an unknown field at each of
		// the given places: the top of admin, a listener and the inside of
		// a typed_config.
		withUnknown := func(admin, listener, hcm bool) string {
			text := `admin:
  #ADMIN
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
static_resources:
  listeners:
  - name: l
    #LISTENER
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          #HCM
          stat_prefix: l
          route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, direct_response: {status: 200}}]}]}
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
`
			// A marker that is not replaced stays a YAML comment.
			if admin {
				text = strings.Replace(text, "#ADMIN", "bogus_admin: 1", 1)
			}
			if listener {
				text = strings.Replace(text, "#LISTENER", "bogus_listener: true", 1)
			}
			if hcm {
				text = strings.Replace(text, "#HCM", "bogus_hcm: x", 1)
			}
			return text
		}
		const (
			adminPath    = "admin.bogus_admin"
			listenerPath = "static_resources.listeners[0].bogus_listener"
			hcmPath      = "static_resources.listeners[0].filter_chains[0].filters[0].typed_config.bogus_hcm"
		)

		DescribeTable("are rejected with their full path",
			func(admin, listener, hcm bool, path string) {
				r, file := validate("unknown.yaml", withUnknown(admin, listener, hcm))
				Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
				Expect(r.Stderr).To(ContainSubstring(fmt.Sprintf("error initializing configuration '%s': ", file)))
				Expect(r.Stderr).To(ContainSubstring(path))
			},
			Entry("in admin", true, false, false, adminPath),
			Entry("in a listener", false, true, false, listenerPath),
			Entry("inside a typed_config", false, false, true, hcmPath),
		)

		It("are rejected in serve mode too", func() {
			s := Launch(newDir(), "unknown.yaml", withUnknown(false, true, false))
			Expect(s.Wait(startTimeout)).To(Equal(1))
			Expect(s.Stderr()).To(ContainSubstring(listenerPath))
		})

		for _, flag := range []string{"--allow-unknown-static-fields", "--allow-unknown-fields"} {
			It(fmt.Sprintf("are dropped with a warning naming each path under %s", flag), func() {
				dir := newDir()
				logPath := filepath.Join(dir, "sidecar.log")
				s := Launch(dir, "unknown.yaml", withUnknown(true, true, true), flag,
					"--log-path", logPath, "--file-flush-interval-msec", "100")
				s.WaitForAdmin()
				Expect(s.ServerInfo().GetCommandLineOptions().GetAllowUnknownStaticFields()).To(BeTrue())
				for _, p := range []string{adminPath, listenerPath, hcmPath} {
					Eventually(func() string { return readFile(logPath) }).Should(ContainSubstring(p))
				}
				if flag == "--allow-unknown-fields" {
					Expect(readFile(logPath)).To(ContainSubstring("deprecated"))
				}
			})
		}
	})

	DescribeTable("load errors stop the sidecar with a clear message",
		func(name, content string, args []string, want string) {
			r, path := validate(name, content, args...)
			Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
			Expect(r.Stderr).To(ContainSubstring(path), "the message names the file")
			Expect(r.Stderr).To(ContainSubstring(want))
		},
		Entry("an unknown typed_config type", "unknown_type.yaml", `static_resources:
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    filter_chains: [{filters: [{name: x, typed_config: {"@type": type.googleapis.com/foo.Bar}}]}]
`, nil, `static_resources.listeners[0].filter_chains[0].filters[0].typed_config: unknown type "type.googleapis.com/foo.Bar"; see docs/extensions.md`),
		Entry("an Envoy extension Outrigger does not carry, with the reason from docs/extensions.md", "redis.yaml", `static_resources:
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    filter_chains: [{filters: [{name: envoy.filters.network.redis_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.redis_proxy.v3.RedisProxy, stat_prefix: r}}]}]
`, nil, `static_resources.listeners[0].filter_chains[0].filters[0].typed_config: unknown type "type.googleapis.com/envoy.extensions.filters.network.redis_proxy.v3.RedisProxy"`+
			` (envoy.filters.network.redis_proxy: a protocol proxy Outrigger does not carry); see docs/extensions.md`),
		Entry("a WebAssembly filter, with the reason from docs/extensions.md", "wasm.yaml", `static_resources:
  listeners:
  - name: l
    address: {socket_address: {address: 127.0.0.1, port_value: 0}}
    filter_chains: [{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager,
      stat_prefix: h, route_config: {}, http_filters: [{name: envoy.filters.http.wasm, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm}},
        {name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}]}]
`, nil, `http_filters[0].typed_config: unknown type "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm"`+
			` (envoy.filters.http.wasm: WebAssembly is not embedded); see docs/extensions.md`),
		Entry("a YAML syntax error, with its line", "broken.yaml", "admin:\n  address: [\n", nil, "line"),
		Entry("an unsupported file extension", "bootstrap.txt", minimalYAML, nil, ".yaml"),
		Entry("the v2 API", "v2.yaml", minimalYAML, []string{"--bootstrap-version", "2"},
			"bootstrap version 2 (the v2 API) is not supported; convert the configuration to the v3 API"),
		Entry("an unknown API version", "v4.yaml", minimalYAML, []string{"--bootstrap-version", "4"}, "4"),
	)

	It("accepts --bootstrap-version 3", func() {
		r, _ := validate("v3.yaml", minimalYAML, "--bootstrap-version", "3")
		Expect(r.ExitCode).To(Equal(0), "stderr: %s", r.Stderr)
	})

	It("reports a missing file with its path", func() {
		path := filepath.Join(newDir(), "missing.yaml")
		r := Run("--mode", "validate", "-c", path)
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(path))
	})

	Describe("--disable-extensions", func() {
		withRouter := Bootstrap{Listeners: []Listener{helloListener("l", 10001, "x")}}.YAML

		DescribeTable("refuses a configuration that uses a disabled extension",
			func(item string) {
				r, _ := validate("bootstrap.yaml", withRouter(), "--disable-extensions", item)
				Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
				Expect(r.Stderr).To(MatchRegexp(`error initializing configuration '[^']*': static_resources\.listeners\[0\]\.filter_chains\[0\]\.filters\[0\]\.typed_config[^\n]*is disabled by --disable-extensions`))
			},
			Entry("envoy spelling", "envoy.filters.http/envoy.filters.http.router"),
			Entry("proxy spelling", "envoy.filters.http/proxy.filters.http.router"),
		)

		It("only warns about an unknown extension name", func() {
			r, _ := validate("bootstrap.yaml", withRouter(), "--disable-extensions", "envoy.filters.http/no.such.filter")
			Expect(r.ExitCode).To(Equal(0), "stderr: %s", r.Stderr)
		})

		It("refuses a malformed item", func() {
			r, _ := validate("bootstrap.yaml", withRouter(), "--disable-extensions", "nocategory")
			Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
			Expect(r.Stderr).To(ContainSubstring("nocategory"))
		})

		It("marks the extension disabled in /server_info", func() {
			s := Start(newDir(), Bootstrap{}.YAML(), "--disable-extensions", "envoy.access_loggers/envoy.access_loggers.file")
			info := s.ServerInfo()
			Expect(info.GetCommandLineOptions().GetDisabledExtensions()).To(ConsistOf("envoy.access_loggers/envoy.access_loggers.file"))
			var found bool
			for _, e := range info.GetNode().GetExtensions() {
				if e.GetCategory() == "envoy.access_loggers" && (e.GetName() == "proxy.access_loggers.file" || e.GetName() == "envoy.access_loggers.file") {
					found = true
					Expect(e.GetDisabled()).To(BeTrue())
				}
			}
			Expect(found).To(BeTrue(), "the file access logger is listed in node.extensions")
		})
	})
})
