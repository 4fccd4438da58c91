package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The external processing filter's extensions", func() {
	const (
		saveType   = "type.googleapis.com/envoy.extensions.http.ext_proc.response_processors.save_processing_response.v3.SaveProcessingResponse"
		mappedType = "type.googleapis.com/envoy.extensions.http.ext_proc.processing_request_modifiers.mapped_attribute_builder.v3.MappedAttributeBuilder"
		perRoute   = "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute"
		saveState  = "envoy.http.ext_proc.response_processors.save_processing_response"
	)
	client := &http.Client{Timeout: 10 * time.Second}

	It("saves the processor's answers in the filter state with save_processing_response", func() {
		proc, procPort := startExtProcessor("save")
		port := freePort()
		logPath := filepath.Join(newDir(), "access.log")
		spec := extProcListener("save", port, `grpc_service: {envoy_grpc: {cluster_name: proc}},
			on_processing_response: {name: save, typed_config: `+withType(saveType, `{filter_state_name_suffix: s,
				save_request_headers: {save_response: true}, save_immediate_response: {save_response: true}}`)+`}`, "", procPort)
		spec.HCM = "{stat_prefix: save, access_log: [" + fileLog(logPath,
			"%REQ(:PATH)% status=%FILTER_STATE("+saveState+".s:FIELD:status)% saved=%FILTER_STATE("+saveState+".s:PLAIN)%\n") + "]}"
		spec.Clusters = []proxyCluster{{Name: "up", Port: portNum(extProcUpstream())}, {Name: "uph2", Port: 1}, {Name: "proc", Port: procPort, Extra: h2cOptions()}}
		Start(newDir(), spec.YAML(), "--file-flush-interval-msec", "100")

		Expect(httpDo(client, "GET", listenerURL(port, "/hdr/save"), nil, nil).Status).To(Equal(201))
		r := httpDo(client, "GET", listenerURL(port, "/immediate/save"), nil, nil)
		Expect(r.Status).To(Equal(403))
		Expect(proc.kinds("/hdr/save")).To(HaveLen(2), "both heads went to the processor")
		var lines []string
		Eventually(func() []string {
			b, _ := os.ReadFile(logPath)
			lines = strings.Split(strings.TrimSpace(string(b)), "\n")
			return lines
		}).Should(HaveLen(2))
		// The request headers' answer is saved; the response headers'
		// is not asked for.
		Expect(lines).To(ContainElement(And(HavePrefix("/hdr/save status=OK saved="), ContainSubstring(`"requestHeaders"`),
			ContainSubstring(`"key":"x-proc-req"`), Not(ContainSubstring(`"responseHeaders"`)))))
		Expect(lines).To(ContainElement(And(HavePrefix("/immediate/save status=OK saved="), ContainSubstring(`"immediateResponse"`),
			ContainSubstring(`"details":"blocked by policy"`))))
	})

	It("remaps the attributes with mapped_attribute_builder, for the filter and per route", func() {
		proc, procPort := startExtProcessor("mapped")
		port := freePort()
		spec := extProcListener("mapped", port, `grpc_service: {envoy_grpc: {cluster_name: proc}},
			request_attributes: [request.path], response_attributes: [response.code],
			processing_request_modifier: {name: map, typed_config: `+withType(mappedType, `{mapped_request_attributes: {verb: request.method, "team": "request.headers['x-team']"}}`)+`}`, "", procPort)
		// A route whose override maps the response's attributes too.
		spec.Routes = `[{match: {prefix: /route}, route: {cluster: up}, typed_per_filter_config: {envoy.filters.http.ext_proc: ` +
			withType(perRoute, `{overrides: {processing_request_modifier: {name: map, typed_config: `+withType(mappedType, `{mapped_response_attributes: {status: response.code, asked: request.path}}`)+`}}}`) +
			`}}, {match: {prefix: /}, route: {cluster: up}}]`
		spec.Clusters = []proxyCluster{{Name: "up", Port: portNum(extProcUpstream())}, {Name: "uph2", Port: 1}, {Name: "proc", Port: procPort, Extra: h2cOptions()}}
		Start(newDir(), spec.YAML())

		Expect(httpDo(client, "GET", listenerURL(port, "/filter"), nil, http.Header{"X-Team": {"blue"}}).Status).To(Equal(200))
		kinds := proc.kinds("/filter")
		Expect(kinds).To(HaveLen(4))
		// The mapping replaces the request's attributes; the response
		// has no mapping, and keeps the filter's.
		Expect(kinds[0]).To(Equal("request_attributes(envoy.filters.http.ext_proc:team=blue,envoy.filters.http.ext_proc:verb=GET)"))
		Expect(kinds[2]).To(Equal("response_attributes(envoy.filters.http.ext_proc:response.code=200)"))

		Expect(httpDo(client, "GET", listenerURL(port, "/route/1"), nil, nil).Status).To(Equal(200))
		kinds = proc.kinds("/route/1")
		Expect(kinds).To(HaveLen(4))
		// The route's modifier has no request mapping: the filter's own
		// request attributes go.
		Expect(kinds[0]).To(Equal("request_attributes(envoy.filters.http.ext_proc:request.path=/route/1)"))
		Expect(kinds[2]).To(Equal("response_attributes(envoy.filters.http.ext_proc:asked=/route/1,envoy.filters.http.ext_proc:status=200)"))
	})

	It("refuses a response processor or a modifier of another type, with its path", func() {
		procPort := freePort()
		spec := extProcListener("bad", freePort(), `grpc_service: {envoy_grpc: {cluster_name: proc}},
			on_processing_response: {name: x, typed_config: `+withType(mappedType, `{}`)+`}`, "", procPort)
		spec.Clusters = []proxyCluster{{Name: "up", Port: 1}, {Name: "uph2", Port: 1}, {Name: "proc", Port: procPort, Extra: h2cOptions()}}
		res, _ := validate("bad.yaml", spec.YAML())
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(res.Stderr + res.Stdout).To(ContainSubstring("typed_config.on_processing_response.typed_config: extension \"proxy.http.ext_proc.processing_request_modifiers.mapped_attribute_builder\" (category envoy.http.ext_proc.processing_request_modifiers) cannot be used here: expected category envoy.http.ext_proc.response_processors"))
	})
})
