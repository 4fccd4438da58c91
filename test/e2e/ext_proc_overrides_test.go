package e2e

import (
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocsvc "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// overridesProcessor is an external processor that records, per :path,
// the stream's x-token initial metadata, the forwarded metadata
// namespaces and the kinds of messages it got; it fails the stream of a
// path containing /fail, answers one containing /deny with an immediate
// 403, never answers the request body of one containing /slow, and
// answers the request headers of /mode/<name>
// with a mode_override: /mode/skip skips the response headers,
// /mode/buffer also buffers the response body.
type overridesProcessor struct {
	extprocsvc.UnimplementedExternalProcessorServer
	mu   sync.Mutex
	seen map[string][]string
}

func (p *overridesProcessor) record(path, what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[path] = append(p.seen[path], what)
}

func (p *overridesProcessor) got(path string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen[path]...)
}

// Process implements the processor's stream.
func (p *overridesProcessor) Process(srv extprocsvc.ExternalProcessor_ProcessServer) error {
	path := ""
	for {
		req, err := srv.Recv()
		if err != nil {
			return nil
		}
		var resp *extprocsvc.ProcessingResponse
		switch v := req.GetRequest().(type) {
		case *extprocsvc.ProcessingRequest_RequestHeaders:
			path = headerOf(v.RequestHeaders.GetHeaders(), ":path")
			md, _ := metadata.FromIncomingContext(srv.Context())
			var ns []string
			for k, v := range req.GetMetadataContext().GetFilterMetadata() {
				if owner := v.GetFields()["owner"].GetStringValue(); owner != "" {
					k += ":" + owner
				}
				ns = append(ns, k)
			}
			sort.Strings(ns)
			obs := ""
			if req.GetObservabilityMode() {
				obs = ",observed"
			}
			p.record(path, fmt.Sprintf("request_headers(token=%s,ns=%s%s)", strings.Join(md.Get("x-token"), ","), strings.Join(ns, ","), obs))
			if strings.Contains(path, "/fail") {
				return status.Error(codes.Unavailable, "processor refuses")
			}
			if strings.Contains(path, "/deny") {
				resp = denial(403, "denied")
				break
			}
			resp = &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocsvc.HeadersResponse{}}}
			switch {
			case strings.HasPrefix(path, "/mode/skip"):
				resp.ModeOverride = &extprocv3.ProcessingMode{ResponseHeaderMode: extprocv3.ProcessingMode_SKIP}
			case strings.HasPrefix(path, "/mode/buffer"):
				resp.ModeOverride = &extprocv3.ProcessingMode{ResponseHeaderMode: extprocv3.ProcessingMode_SKIP, ResponseBodyMode: extprocv3.ProcessingMode_BUFFERED}
			}
		case *extprocsvc.ProcessingRequest_RequestBody:
			p.record(path, fmt.Sprintf("request_body(%q,eos=%t,observed=%t)", v.RequestBody.GetBody(), v.RequestBody.GetEndOfStream(), req.GetObservabilityMode()))
			if strings.Contains(path, "/slow") {
				// Never answers: observability mode does not wait.
				<-srv.Context().Done()
				return nil
			}
			resp = &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_RequestBody{RequestBody: &extprocsvc.BodyResponse{}}}
		case *extprocsvc.ProcessingRequest_ResponseHeaders:
			p.record(path, "response_headers")
			resp = &extprocsvc.ProcessingResponse{Response: &extprocsvc.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocsvc.HeadersResponse{}}}
		default:
			p.record(path, "other")
			resp = &extprocsvc.ProcessingResponse{}
		}
		if err := srv.Send(resp); err != nil {
			return nil
		}
	}
}

var _ = Describe("The external processing filter's overrides", func() {
	var (
		client  = &http.Client{Timeout: 10 * time.Second}
		proc    *overridesProcessor
		sc      *Sidecar
		port    int
		obsPort int
	)

	BeforeEach(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		proc = &overridesProcessor{seen: map[string][]string{}}
		srv := grpc.NewServer()
		extprocsvc.RegisterExternalProcessorServer(srv, proc)
		go func() { _ = srv.Serve(ln) }()
		DeferCleanup(srv.Stop)

		const perRoute = "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute"
		route := func(prefix, cfg string) string {
			return `{match: {prefix: ` + prefix + `}, route: {cluster: up}, typed_per_filter_config: {envoy.filters.http.ext_proc: ` + withType(perRoute, cfg) + `}}`
		}
		port, obsPort = freePort(), freePort()
		spec := proxySpec{
			Port:     port,
			Listener: "{name: ov}",
			HCM:      "{stat_prefix: ov}",
			// The virtual host's override adds x-vhost; the routes' replace
			// or add to it.
			VirtualHost: `{typed_per_filter_config: {envoy.filters.http.ext_proc: ` +
				withType(perRoute, "{overrides: {grpc_initial_metadata: [{key: x-token, value: vhost}]}}") + `}}`,
			Routes: "[" + strings.Join([]string{
				route("/tok", "{overrides: {grpc_initial_metadata: [{key: x-token, value: route}]}}"),
				route("/fma", "{overrides: {failure_mode_allow: true}}"),
				route("/ns", "{overrides: {metadata_options: {forwarding_namespaces: {untyped: [other.ns]}}}}"),
				`{match: {prefix: /}, route: {cluster: up}}`,
			}, ", ") + "]",
			Filters: "[" + httpFilter("envoy.filters.http.set_metadata", setMetadataType,
				`{metadata: [{metadata_namespace: team.info, value: {owner: payments}}, {metadata_namespace: other.ns, value: {x: y}}]}`) + ", " +
				httpFilter("envoy.filters.http.ext_proc", "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor",
					`{grpc_service: {envoy_grpc: {cluster_name: proc}, initial_metadata: [{key: x-token, value: filter}]}, message_timeout: 5s, `+
						`status_on_error: {code: 503}, allow_mode_override: true, allowed_override_modes: [{response_header_mode: SKIP}], `+
						`metadata_options: {forwarding_namespaces: {untyped: [team.info]}, cluster_metadata_forwarding_namespaces: {untyped: [cluster.ns, team.info, absent]}}}`) + "]",
			Clusters: []proxyCluster{
				// The cluster's team.info loses to the request's.
				{Name: "up", Port: portNum(extProcUpstream()), Extra: `{metadata: {filter_metadata: {cluster.ns: {tier: gold}, team.info: {owner: cluster}, unlisted: {a: b}}}}`},
				{Name: "proc", Port: ln.Addr().(*net.TCPAddr).Port, Extra: h2cOptions()},
			},
		}
		spec.More = []proxySpec{{
			Port:     obsPort,
			Listener: "{name: obs}",
			HCM:      "{stat_prefix: obs}",
			Routes:   `[{match: {prefix: /}, route: {cluster: up}}]`,
			Filters: "[" + httpFilter("envoy.filters.http.ext_proc", "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor",
				`{grpc_service: {envoy_grpc: {cluster_name: proc}}, message_timeout: 1s, observability_mode: true, deferred_close_timeout: 1s, `+
					`processing_mode: {request_body_mode: STREAMED, response_header_mode: SKIP}}`) + "]",
		}}
		sc = Start(newDir(), spec.YAML())
	})

	get2 := func(port int, path string) Response {
		GinkgoHelper()
		return httpDo(client, "GET", listenerURL(port, path), nil, nil)
	}
	get := func(path string) Response {
		GinkgoHelper()
		return get2(port, path)
	}

	It("merges the routes' grpc_initial_metadata into the stream's and replaces the forwarding namespaces; the cluster's metadata is the least specific", func() {
		Expect(get("/tok/1").Status).To(Equal(200))
		Expect(proc.got("/tok/1")).To(Equal([]string{"request_headers(token=route,ns=cluster.ns,team.info:payments)", "response_headers"}))
		Expect(get("/other/1").Status).To(Equal(200))
		Expect(proc.got("/other/1")).To(Equal([]string{"request_headers(token=vhost,ns=cluster.ns,team.info:payments)", "response_headers"}))
		Expect(get("/ns/1").Status).To(Equal(200))
		Expect(proc.got("/ns/1")).To(Equal([]string{"request_headers(token=vhost,ns=cluster.ns,other.ns,team.info:cluster)", "response_headers"}))
	})

	It("answers status_on_error when the processor fails, unless the route allows failures", func() {
		r := get("/fail/1")
		Expect(r.Status).To(Equal(503), r.Body)
		Expect(statValue(sc, "http.ov.ext_proc.streams_failed")).To(Equal("1"))

		r = get("/fma/fail")
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(HavePrefix("path=/fma/fail\n"))
		Expect(statValue(sc, "http.ov.ext_proc.failure_mode_allowed")).To(Equal("1"))
	})

	It("applies a mode_override only when allowed_override_modes has it", func() {
		Expect(get("/mode/skip").Status).To(Equal(200))
		Expect(proc.got("/mode/skip")).To(Equal([]string{"request_headers(token=vhost,ns=cluster.ns,team.info:payments)"}), "the response headers were skipped")
		Expect(get("/mode/buffer").Status).To(Equal(200))
		Expect(proc.got("/mode/buffer")).To(Equal([]string{"request_headers(token=vhost,ns=cluster.ns,team.info:payments)", "response_headers"}), "the override is not allowed")
	})

	It("in observability mode, sends the request and goes on: answers, failures and silence change nothing", func() {
		r := httpDo(client, "POST", listenerURL(obsPort, "/deny/slow"), strings.NewReader("watched body"), nil)
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(r.Body).To(Equal("path=/deny/slow\nx-proc-req=\nx-remove-me=\nbody=watched body"))
		Eventually(func() []string { return proc.got("/deny/slow") }).Should(ContainElements(
			"request_headers(token=,ns=,observed)", `request_body("watched body",eos=false,observed=true)`))

		r = get2(obsPort, "/fail/obs")
		Expect(r.Status).To(Equal(200), r.Body)
		Expect(statValue(sc, "http.obs.ext_proc.streams_started")).To(Equal("2"))
		Expect(statValue(sc, "http.obs.ext_proc.stream_msgs_received")).To(Equal("0"))
		Expect(statValue(sc, "http.obs.ext_proc.message_timeouts")).To(Equal("0"))
		// The processor failed the second stream; the first is closed
		// by the deferred close, the processor never ending it.
		Eventually(func() string { return statValue(sc, "http.obs.ext_proc.streams_failed") }).Should(Equal("1"))
		Eventually(func() string { return statValue(sc, "http.obs.ext_proc.streams_closed") }).Should(Equal("1"))
	})
})
