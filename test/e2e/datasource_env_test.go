package e2e

import (
	"fmt"
	"net/http"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// setEnv sets an environment variable for the sidecars the spec starts,
// until the spec ends.
func setEnv(name, value string) {
	GinkgoHelper()
	Expect(os.Setenv(name, value)).To(Succeed())
	DeferCleanup(os.Unsetenv, name)
}

var _ = Describe("DataSource environment_variable", func() {
	It("reads direct response bodies, access log formats and Lua scripts from the sidecar's environment", func() {
		setEnv("OUTRIGGER_E2E_BODY", "body from the environment")
		setEnv("OUTRIGGER_E2E_FORMAT", "ENVLOG %RESPONSE_CODE% %REQ(:PATH)%\n")
		setEnv("OUTRIGGER_E2E_LUA", `function envoy_on_response(h) h:headers():add("x-lua", "from-env") end`)
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM: `{stat_prefix: env, access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
				log_format: {text_format_source: {environment_variable: OUTRIGGER_E2E_FORMAT}}}}]}`,
			Filters: "[" + httpFilter("envoy.filters.http.lua", luaType, `{default_source_code: {environment_variable: OUTRIGGER_E2E_LUA}}`) + "]",
			Routes:  `[{match: {prefix: /}, direct_response: {status: 200, body: {environment_variable: OUTRIGGER_E2E_BODY}}}]`,
		}.YAML(), "--file-flush-interval-msec", "50")
		r := httpDo(http.DefaultClient, http.MethodGet, listenerURL(port, "/env"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(Equal("body from the environment"))
		Expect(r.Header.Get("x-lua")).To(Equal("from-env"))
		Eventually(s.Stdout).Should(ContainSubstring("ENVLOG 200 /env\n"))
	})

	It("serves a TLS certificate and key given in environment variables", func() {
		dir := newDir()
		f := newTLSFiles(dir)
		cert, err := os.ReadFile(f.cert)
		Expect(err).NotTo(HaveOccurred())
		key, err := os.ReadFile(f.key)
		Expect(err).NotTo(HaveOccurred())
		setEnv("OUTRIGGER_E2E_CERT", string(cert))
		setEnv("OUTRIGGER_E2E_KEY", string(key))
		port := freePort()
		Start(dir, tlsBootstrap(port, "", []string{`{transport_socket: {name: envoy.transport_sockets.tls, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext,
			common_tls_context: {tls_certificates: [{certificate_chain: {environment_variable: OUTRIGGER_E2E_CERT}, private_key: {environment_variable: OUTRIGGER_E2E_KEY}}]}}},
			filters: [` + directHCM("env", "") + `]}`}))
		out, code := curlTLS("--cacert", f.ca, "--resolve", resolve("localhost", port), fmt.Sprintf("https://localhost:%d/", port))
		Expect(code).To(Equal(0), out)
		Expect(out).To(Equal("env"))
	})

	It("refuses a variable that is not set, with its path, wherever a DataSource takes one", func() {
		r, _ := validate("b.yaml", proxySpec{
			Port: freePort(),
			HCM: `{stat_prefix: env, access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
				log_format: {text_format_source: {environment_variable: OUTRIGGER_E2E_NO_FORMAT}}}}]}`,
			Filters: "[" + httpFilter("envoy.filters.http.lua", luaType, `{default_source_code: {environment_variable: OUTRIGGER_E2E_NO_LUA}}`) + "]",
			Routes:  `[{match: {prefix: /}, direct_response: {status: 200, body: {environment_variable: OUTRIGGER_E2E_NOT_SET}}}]`,
		}.YAML())
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("direct_response.body.environment_variable: OUTRIGGER_E2E_NOT_SET is not set"))
		Expect(r.Stderr).To(ContainSubstring("log_format.text_format_source.environment_variable: OUTRIGGER_E2E_NO_FORMAT is not set"))
		Expect(r.Stderr).To(ContainSubstring("default_source_code.environment_variable: OUTRIGGER_E2E_NO_LUA is not set"))
	})
})
