package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// recordAttributes notes the attributes a processing request carries
// (ProcessingRequest.attributes), as "<phase>_attributes(k=v,...)" with
// the keys sorted, when it carries some.
func recordAttributes(p *extProcessor, path, phase string, req *extprocsvc.ProcessingRequest) {
	attrs := req.GetAttributes()
	if len(attrs) == 0 {
		return
	}
	var entries []string
	for ns, st := range attrs {
		for k, v := range st.GetFields() {
			entries = append(entries, fmt.Sprintf("%s:%s=%v", ns, k, v.AsInterface()))
		}
	}
	slices.Sort(entries)
	p.record(path, phase+"_attributes("+strings.Join(entries, ",")+")")
}

var _ = Describe("The external processing filter's attributes", func() {
	It("sends request_attributes with the request headers and response_attributes with the response headers, leaving out what the stream does not have", func() {
		proc, procPort := startExtProcessor("attrs")
		port := freePort()
		spec := extProcListener("attrs", port, `grpc_service: {envoy_grpc: {cluster_name: proc}},
			request_attributes: [request.path, request.method, "request.headers['x-team']", source.port, response.code],
			response_attributes: [response.code, request.url_path]`, "", procPort)
		spec.Clusters = []proxyCluster{{Name: "up", Port: portNum(extProcUpstream())}, {Name: "uph2", Port: 1}, {Name: "proc", Port: procPort, Extra: h2cOptions()}}
		Start(newDir(), spec.YAML())

		client := &http.Client{Timeout: 10 * time.Second}
		Expect(httpDo(client, "GET", listenerURL(port, "/attrs/1?q=1"), nil, http.Header{"X-Team": {"blue"}}).Status).To(Equal(200))
		kinds := proc.kinds("/attrs/1?q=1")
		Expect(kinds).To(HaveLen(4))
		Expect(kinds[0]).To(MatchRegexp(`^request_attributes\(envoy\.filters\.http\.ext_proc:request\.headers\['x-team'\]=blue,`+
			`envoy\.filters\.http\.ext_proc:request\.method=GET,envoy\.filters\.http\.ext_proc:request\.path=/attrs/1\?q=1,`+
			`envoy\.filters\.http\.ext_proc:source\.port=[1-9][0-9]*\)$`), "response.code is absent at the request: left out")
		Expect(kinds[2]).To(Equal("response_attributes(envoy.filters.http.ext_proc:request.url_path=/attrs/1,envoy.filters.http.ext_proc:response.code=200)"))
	})

	It("sends each direction's attributes once, with its first message, whichever phase it is", func() {
		proc, procPort := startExtProcessor("attrs-body")
		port := freePort()
		spec := extProcListener("attrs-body", port, `grpc_service: {envoy_grpc: {cluster_name: proc}},
			processing_mode: {request_header_mode: SKIP, response_header_mode: SKIP, request_body_mode: BUFFERED, response_body_mode: STREAMED},
			request_attributes: [request.method, request.path],
			response_attributes: [response.code]`, "", procPort)
		spec.Clusters = []proxyCluster{{Name: "up", Port: portNum(extProcUpstream())}, {Name: "uph2", Port: 1}, {Name: "proc", Port: procPort, Extra: h2cOptions()}}
		Start(newDir(), spec.YAML())

		client := &http.Client{Timeout: 10 * time.Second}
		r := httpDo(client, "POST", listenerURL(port, "/body-only"), strings.NewReader("hello"), nil)
		Expect(r.Status).To(Equal(200))
		Expect(r.Body).To(ContainSubstring("BODY=HELLO"), "both bodies went through the processor")
		// The heads are skipped: the processor never learns the path, so
		// it files everything under "".
		kinds := proc.kinds("")
		Expect(len(kinds)).To(BeNumerically(">=", 4))
		Expect(kinds[:3]).To(Equal([]string{
			"request_attributes(envoy.filters.http.ext_proc:request.method=POST,envoy.filters.http.ext_proc:request.path=/body-only)",
			`request_body("hello",eos=true)`,
			"response_attributes(envoy.filters.http.ext_proc:response.code=200)",
		}))
		Expect(kinds[3]).To(HavePrefix("response_body("))
		n := 0
		for _, k := range kinds {
			if strings.HasSuffix(k, ")") && strings.Contains(k, "_attributes(") {
				n++
			}
		}
		Expect(n).To(Equal(2), "once per direction: %v", kinds)
	})

	It("sends a route's overrides.request_attributes and response_attributes in place of the filter's", func() {
		proc, procPort := startExtProcessor("attrs-route")
		port := freePort()
		spec := extProcListener("attrs-route", port, `grpc_service: {envoy_grpc: {cluster_name: proc}},
			request_attributes: [request.path], response_attributes: [response.code]`, "", procPort)
		const perRoute = "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute"
		spec.Routes = "[" + `{match: {prefix: /routed}, route: {cluster: up}, typed_per_filter_config: {envoy.filters.http.ext_proc: ` +
			withType(perRoute, "{overrides: {request_attributes: [request.method, \"request.headers['x-team']\"], response_attributes: [request.url_path]}}") +
			`}}, ` + strings.TrimPrefix(spec.Routes, "[")
		spec.Clusters = []proxyCluster{{Name: "up", Port: portNum(extProcUpstream())}, {Name: "uph2", Port: 1}, {Name: "proc", Port: procPort, Extra: h2cOptions()}}
		Start(newDir(), spec.YAML())

		client := &http.Client{Timeout: 10 * time.Second}
		Expect(httpDo(client, "GET", listenerURL(port, "/routed/1"), nil, http.Header{"X-Team": {"red"}}).Status).To(Equal(200))
		kinds := proc.kinds("/routed/1")
		Expect(kinds).To(HaveLen(4))
		Expect(kinds[0]).To(Equal("request_attributes(envoy.filters.http.ext_proc:request.headers['x-team']=red,envoy.filters.http.ext_proc:request.method=GET)"))
		Expect(kinds[2]).To(Equal("response_attributes(envoy.filters.http.ext_proc:request.url_path=/routed/1)"))

		// Another route keeps the filter's lists.
		Expect(httpDo(client, "GET", listenerURL(port, "/other"), nil, nil).Status).To(Equal(200))
		kinds = proc.kinds("/other")
		Expect(kinds).To(HaveLen(4))
		Expect(kinds[0]).To(Equal("request_attributes(envoy.filters.http.ext_proc:request.path=/other)"))
		Expect(kinds[2]).To(Equal("response_attributes(envoy.filters.http.ext_proc:response.code=200)"))
	})

	It("refuses a route's deprecated overrides.async_mode, which Envoy does not implement", func() {
		const perRoute = "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute"
		spec := extProcListener("async", freePort(), `grpc_service: {envoy_grpc: {cluster_name: proc}}`, "", 1)
		spec.Routes = "[" + `{match: {prefix: /a}, route: {cluster: up}, typed_per_filter_config: {envoy.filters.http.ext_proc: ` +
			withType(perRoute, "{overrides: {async_mode: true}}") + `}}, ` + strings.TrimPrefix(spec.Routes, "[")
		spec.Clusters = []proxyCluster{{Name: "up", Port: 1}, {Name: "uph2", Port: 1}, {Name: "proc", Port: 1, Extra: h2cOptions()}}
		res, _ := validate("async.yaml", spec.YAML())
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(res.Stderr + res.Stdout).To(And(ContainSubstring("overrides.async_mode"), ContainSubstring("not implemented in Envoy")))
	})

	It("is refused at load when an attribute does not parse, naming it", func() {
		spec := extProcListener("bad", freePort(), `grpc_service: {envoy_grpc: {cluster_name: proc}}, request_attributes: [request.path, "request.headers["]`, "", 1)
		spec.Clusters = []proxyCluster{{Name: "up", Port: 1}, {Name: "uph2", Port: 1}, {Name: "proc", Port: 1, Extra: h2cOptions()}}
		res, _ := validate("bad.yaml", spec.YAML())
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(res.Stderr + res.Stdout).To(ContainSubstring("http_filters[0].typed_config.request_attributes[1]: ERROR"))
	})
})
