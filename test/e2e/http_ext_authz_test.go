package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// authzServer is a gRPC Authorization service. It answers by the request
// path: /allow adds headers, /deny denies with 401, /fail fails the call,
// /hang never answers (until the call is cancelled); anything else is
// allowed plainly. It keeps every CheckRequest.
type authzServer struct {
	authv3.UnimplementedAuthorizationServer
	mu       sync.Mutex
	requests []*authv3.CheckRequest
}

func (a *authzServer) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	a.mu.Lock()
	a.requests = append(a.requests, req)
	a.mu.Unlock()
	path := req.GetAttributes().GetRequest().GetHttp().GetPath()
	switch {
	case strings.HasPrefix(path, "/allow"):
		return &authv3.CheckResponse{
			Status: &status.Status{Code: int32(codes.OK)},
			HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: &authv3.OkHttpResponse{
				Headers: []*corev3.HeaderValueOption{{
					Header:       &corev3.HeaderValue{Key: "x-authz-user", Value: "alice"},
					AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
				}},
				HeadersToRemove:      []string{"x-remove-me"},
				ResponseHeadersToAdd: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: "x-authz-resp", Value: "yes"}}},
			}},
		}, nil
	case strings.HasPrefix(path, "/deny"):
		return &authv3.CheckResponse{
			Status: &status.Status{Code: int32(codes.PermissionDenied)},
			HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{
				Status: &typev3.HttpStatus{Code: typev3.StatusCode_Unauthorized},
				Headers: []*corev3.HeaderValueOption{
					{Header: &corev3.HeaderValue{Key: "www-authenticate", Value: "Bearer"}},
					{Header: &corev3.HeaderValue{Key: "content-type", Value: "application/json"}},
				},
				Body: `{"error":"go away"}`,
			}},
		}, nil
	case strings.HasPrefix(path, "/mutate"):
		// An Envoy-internal header, which default mutation rules refuse,
		// and one with a line break, which validate_mutations refuses
		// under /mutate/invalid.
		headers := []*corev3.HeaderValueOption{
			{Header: &corev3.HeaderValue{Key: "x-authz-user", Value: "carol"}},
			{Header: &corev3.HeaderValue{Key: "x-envoy-sneaky", Value: "1"}},
		}
		if strings.HasPrefix(path, "/mutate/invalid") {
			headers = append(headers, &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: "x-bad", Value: "a\nb"}})
		}
		return &authv3.CheckResponse{
			Status:       &status.Status{Code: int32(codes.OK)},
			HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: &authv3.OkHttpResponse{Headers: headers}},
		}, nil
	case strings.HasPrefix(path, "/fail"):
		return nil, fmt.Errorf("authorization backend down")
	case strings.HasPrefix(path, "/hang"):
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &authv3.CheckResponse{Status: &status.Status{Code: int32(codes.OK)}}, nil
}

// last returns the last CheckRequest whose path starts with prefix.
func (a *authzServer) last(prefix string) *authv3.CheckRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := len(a.requests) - 1; i >= 0; i-- {
		if strings.HasPrefix(a.requests[i].GetAttributes().GetRequest().GetHttp().GetPath(), prefix) {
			return a.requests[i]
		}
	}
	return nil
}

// count returns how many checks the service got for paths under prefix.
func (a *authzServer) count(prefix string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, r := range a.requests {
		if strings.HasPrefix(r.GetAttributes().GetRequest().GetHttp().GetPath(), prefix) {
			n++
		}
	}
	return n
}

// startAuthzServer serves the gRPC Authorization service on a loopback
// port until the spec ends.
func startAuthzServer() (*authzServer, int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	a := &authzServer{}
	srv := grpc.NewServer()
	authv3.RegisterAuthorizationServer(srv, a)
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Stop)
	return a, ln.Addr().(*net.TCPAddr).Port
}

// httpAuthz is an HTTP authorization service (behind path_prefix /auth):
// /auth/allow answers 200 with headers, /auth/deny 403 with a body and a
// header, /auth/fail 500, /auth/hang waits for the proxy to give up. It
// keeps the requests it got.
type httpAuthz struct {
	mu   sync.Mutex
	seen []*http.Request
	body []string
}

// traceparent is the traceparent of the last check request whose path
// was path ("" when none came, or it carried none).
func (h *httpAuthz) traceparent(path string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.seen) - 1; i >= 0; i-- {
		if h.seen[i].URL.Path == path {
			return h.seen[i].Header.Get("Traceparent")
		}
	}
	return ""
}

func (h *httpAuthz) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.seen = append(h.seen, r)
	h.body = append(h.body, string(b))
	h.mu.Unlock()
	switch {
	case strings.HasPrefix(r.URL.Path, "/auth/allow"):
		w.Header().Set("x-authz-user", "bob")
		w.Header().Set("x-envoy-auth-headers-to-remove", "x-remove-me")
		w.Header().Set("x-client-ok", "yes")
		w.Header().Set("x-not-allowed", "no")
		w.WriteHeader(200)
	case strings.HasPrefix(r.URL.Path, "/auth/deny"):
		w.Header().Set("x-deny", "http")
		w.WriteHeader(403)
		_, _ = io.WriteString(w, "denied by http")
	case strings.HasPrefix(r.URL.Path, "/auth/fail"):
		w.WriteHeader(500)
	case strings.HasPrefix(r.URL.Path, "/auth/hang"):
		<-r.Context().Done()
	default:
		w.WriteHeader(200)
	}
}

// last returns the last request and body the service got under prefix.
func (h *httpAuthz) last(prefix string) (*http.Request, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.seen) - 1; i >= 0; i-- {
		if strings.HasPrefix(h.seen[i].URL.Path, prefix) {
			return h.seen[i], h.body[i]
		}
	}
	return nil, ""
}

// echoUpstream answers with the request's path, the headers the filter
// edits, and the body, one per line.
func echoUpstream() string {
	return httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var lines []string
		lines = append(lines, "path="+r.URL.RequestURI())
		for _, k := range []string{"x-authz-user", "x-remove-me", "x-envoy-auth-failure-mode-allowed", "x-envoy-sneaky"} {
			lines = append(lines, k+"="+r.Header.Get(k))
		}
		lines = append(lines, "body="+string(b))
		_, _ = io.WriteString(w, strings.Join(lines, "\n"))
	}), false)
}

// extAuthzListener is a listener on port whose ext_authz filter has the
// fields filterCfg (YAML flow mapping content), with routes to the
// upstream: /public with the filter disabled, /ctx with context extensions
// (and the virtual host's), and the rest; logPath, if not "", is its
// access log.
func extAuthzListener(name string, port int, filterCfg, logPath string) proxySpec {
	GinkgoHelper()
	accessLog := ""
	if logPath != "" {
		accessLog = ", access_log: [" + fileLog(logPath, "%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS%\n") + "]"
	}
	const perRoute = "type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute"
	return proxySpec{
		Port:     port,
		Listener: "{name: " + name + "}",
		HCM:      "{stat_prefix: " + name + accessLog + "}",
		VirtualHost: "{typed_per_filter_config: {envoy.filters.http.ext_authz: " +
			withType(perRoute, `{check_settings: {context_extensions: {level: vhost, vh: "yes"}}}`) + "}}",
		Routes: `[{match: {prefix: /public}, route: {cluster: up}, typed_per_filter_config: {envoy.filters.http.ext_authz: ` +
			withType(perRoute, "{disabled: true}") + `}},
			{match: {prefix: /allow/ctx}, route: {cluster: up}, metadata: {filter_metadata: {team: {owner: payments}, other: {x: y}}}, typed_per_filter_config: {envoy.filters.http.ext_authz: ` +
			withType(perRoute, "{check_settings: {context_extensions: {level: route, tenant: acme}}}") + `}},
			{match: {prefix: /}, route: {cluster: up}}]`,
		Filters: "[" + httpFilter("envoy.filters.http.ext_authz", "type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz", "{"+filterCfg+"}") + "]",
	}
}

// extAuthzBootstrap is the configuration with the upstream, the gRPC
// service's cluster (HTTP/2) and the HTTP service's, and listeners.
func extAuthzBootstrap(up string, grpcPort int, httpAuthz string, listeners ...proxySpec) string {
	GinkgoHelper()
	spec := listeners[0]
	spec.Clusters = []proxyCluster{
		{Name: "up", Port: portNum(up)},
		{Name: "authz_grpc", Port: grpcPort, Extra: h2cOptions()},
		{Name: "authz_http", Port: portNum(httpAuthz)},
	}
	spec.More = listeners[1:]
	// bootstrap_metadata_labels_key reads the node's labels.
	spec.Top = "{node: {id: n1, cluster: shop, metadata: {labels: {app: shop, version: v2, replicas: 3}}}}"
	return spec.YAML()
}

// grpcAuthzFilter is an ext_authz configuration calling the gRPC service,
// with extra fields (YAML flow mapping content).
func grpcAuthzFilter(extra string) string {
	return "grpc_service: {envoy_grpc: {cluster_name: authz_grpc}, timeout: 0.5s}, transport_api_version: V3, " + extra
}

var _ = Describe("The external authorization filter", func() {
	var (
		client = &http.Client{Timeout: 10 * time.Second}
		do     = func(method string, port int, path, body string, header http.Header) Response {
			GinkgoHelper()
			var rd io.Reader
			if body != "" {
				rd = strings.NewReader(body)
			}
			return httpDo(client, method, listenerURL(port, path), rd, header)
		}
	)

	Context("with the gRPC Authorization service", func() {
		var (
			authz              *authzServer
			sc                 *Sidecar
			port, fmaPort      int
			strictPort         int
			logPath            string
			grpcPortForRefusal int
		)

		BeforeEach(func() {
			var grpcPort int
			authz, grpcPort = startAuthzServer()
			grpcPortForRefusal = grpcPort
			up := echoUpstream()
			dir := newDir()
			logPath = filepath.Join(dir, "access.log")
			port, fmaPort, strictPort = freePort(), freePort(), freePort()
			cfg := extAuthzBootstrap(up, grpcPort, "127.0.0.1:1",
				extAuthzListener("front", port, grpcAuthzFilter("status_on_error: {code: 503}, stat_prefix: edge, with_request_body: {max_request_bytes: 8, allow_partial_message: true}, route_metadata_context_namespaces: [team, absent], bootstrap_metadata_labels_key: labels"), logPath),
				extAuthzListener("fma", fmaPort, grpcAuthzFilter("failure_mode_allow: true, failure_mode_allow_header_add: true"), ""),
				extAuthzListener("strict", strictPort, grpcAuthzFilter("with_request_body: {max_request_bytes: 16}"), ""),
			)
			sc = Start(dir, cfg, "--file-flush-interval-msec", "100")
		})

		It("lets an allowed request through with the service's headers, and sends Envoy's CheckRequest", func() {
			r := do("GET", port, "/allow/me?x=1", "", http.Header{"X-Remove-Me": {"secret"}, "X-Authz-User": {"mallory"}, "X-Dup": {"a", "b"}})
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(ContainSubstring("x-authz-user=alice\n"), "the service's header replaced the client's")
			Expect(r.Body).To(ContainSubstring("x-remove-me=\n"), "headers_to_remove")
			Expect(r.Header.Get("x-authz-resp")).To(Equal("yes"), "response_headers_to_add")

			cr := authz.last("/allow/me")
			Expect(cr).NotTo(BeNil())
			h := cr.GetAttributes().GetRequest().GetHttp()
			Expect(h.GetMethod()).To(Equal("GET"))
			Expect(h.GetPath()).To(Equal("/allow/me?x=1"))
			Expect(h.GetHost()).To(Equal(fmt.Sprintf("127.0.0.1:%d", port)))
			Expect(h.GetScheme()).To(Equal("http"))
			Expect(h.GetProtocol()).To(Equal("HTTP/1.1"))
			Expect(h.GetId()).NotTo(BeEmpty())
			Expect(h.GetHeaders()).To(HaveKeyWithValue(":method", "GET"))
			Expect(h.GetHeaders()).To(HaveKeyWithValue(":path", "/allow/me?x=1"))
			Expect(h.GetHeaders()).To(HaveKeyWithValue("x-remove-me", "secret"))
			Expect(h.GetHeaders()).To(HaveKeyWithValue("x-dup", "a,b"))
			Expect(h.GetHeaders()).To(HaveKey("x-request-id"))
			Expect(h.GetHeaders()).NotTo(HaveKey("host"))
			Expect(cr.GetAttributes().GetSource().GetAddress().GetSocketAddress().GetAddress()).To(Equal("127.0.0.1"))
			Expect(cr.GetAttributes().GetDestination().GetAddress().GetSocketAddress().GetPortValue()).To(BeEquivalentTo(port))
			Expect(cr.GetAttributes().GetDestination().GetLabels()).To(Equal(map[string]string{"app": "shop", "version": "v2", "replicas": ""}),
				"bootstrap_metadata_labels_key: the node metadata's labels, a number reading as empty as in Envoy")
			Expect(cr.GetAttributes().GetRequest().GetTime().AsTime()).To(BeTemporally("~", time.Now(), time.Minute))
			Expect(cr.GetAttributes().GetContextExtensions()).To(Equal(map[string]string{"level": "vhost", "vh": "yes"}))

			Expect(statValue(sc, "http.front.ext_authz.edge.ok")).To(Equal("1"))
			Expect(statValue(sc, "cluster.up.ext_authz.edge.ok")).To(Equal("1"))
		})

		It("answers a denied request with the service's status, headers and body, flagged UAEX", func() {
			r := do("GET", port, "/deny/me", "", nil)
			Expect(r.Status).To(Equal(401))
			Expect(r.Body).To(Equal(`{"error":"go away"}`))
			Expect(r.Header.Get("www-authenticate")).To(Equal("Bearer"))
			Expect(r.Header.Values("content-type")).To(Equal([]string{"application/json"}))
			Expect(statValue(sc, "http.front.ext_authz.edge.denied")).To(Equal("1"))
			Eventually(func() string { b, _ := os.ReadFile(logPath); return string(b) }).
				Should(ContainSubstring("/deny/me 401 UAEX ext_authz_denied\n"), "log at %s", logPath)
		})

		It("answers status_on_error when the service fails, or lets the request through with failure_mode_allow", func() {
			Expect(do("GET", port, "/fail/1", "", nil).Status).To(Equal(503))
			Expect(statValue(sc, "http.front.ext_authz.edge.error")).To(Equal("1"))
			Eventually(func() string { b, _ := os.ReadFile(logPath); return string(b) }).
				Should(ContainSubstring("/fail/1 503 UAEX ext_authz_error\n"))

			r := do("GET", fmaPort, "/fail/2", "", nil)
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(ContainSubstring("x-envoy-auth-failure-mode-allowed=true\n"))
			Expect(statValue(sc, "http.fma.ext_authz.error")).To(Equal("1"))
			Expect(statValue(sc, "http.fma.ext_authz.failure_mode_allowed")).To(Equal("1"))
		})

		It("cuts a hanging service at the timeout, counted as an error, while other requests go on", func() {
			type result struct{ status int }
			hung := make(chan result, 1)
			go func() {
				defer GinkgoRecover()
				hung <- result{do("GET", port, "/hang/1", "", nil).Status}
			}()
			Eventually(func() int { return authz.count("/hang/1") }).Should(Equal(1))
			// While that check hangs, another request is served.
			Expect(do("GET", port, "/allow/meanwhile", "", nil).Status).To(Equal(200))
			Eventually(hung, 5*time.Second).Should(Receive(Equal(result{503})))
			Expect(statValue(sc, "http.front.ext_authz.edge.error")).To(Equal("1"))

			// With failure_mode_allow, the timed-out request goes on.
			Expect(do("GET", fmaPort, "/hang/2", "", nil).Status).To(Equal(200))
			Expect(statValue(sc, "http.fma.ext_authz.failure_mode_allowed")).To(Equal("1"))
		})

		It("checks HTTP/2 requests too, body included", func() {
			h2 := httpClients()["HTTP/2"]
			r := httpDo(h2, "POST", listenerURL(port, "/allow/h2"), strings.NewReader("0123456789"), nil)
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(ContainSubstring("x-authz-user=alice\n"))
			Expect(r.Body).To(ContainSubstring("body=0123456789"))
			h := authz.last("/allow/h2").GetAttributes().GetRequest().GetHttp()
			Expect(h.GetProtocol()).To(Equal("HTTP/2"))
			Expect(h.GetBody()).To(Equal("01234567"))

			r = httpDo(h2, "GET", listenerURL(port, "/deny/h2"), nil, nil)
			Expect(r.Status).To(Equal(401))
			Expect(r.Body).To(Equal(`{"error":"go away"}`))
		})

		It("checks only the requests whose dynamic metadata matches filter_enabled_metadata", func() {
			gated := freePort()
			spec := extAuthzListener("gated", gated, "", "")
			spec.Filters = "[" + httpFilter("envoy.filters.http.header_to_metadata", headerToMetadataType,
				`{request_rules: [{header: x-tier, on_header_present: {metadata_namespace: tiers, key: tier}}]}`) + ", " +
				httpFilter("envoy.filters.http.ext_authz", "type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz",
					"{"+grpcAuthzFilter(`filter_enabled_metadata: {filter: tiers, path: [{key: tier}], value: {string_match: {exact: gold}}}`)+"}") + "]"
			gs := Start(newDir(), extAuthzBootstrap(echoUpstream(), grpcPortForRefusal, "127.0.0.1:1", spec))
			Expect(do("GET", gated, "/allow/gold", "", http.Header{"X-Tier": {"gold"}}).Status).To(Equal(200))
			Expect(authz.count("/allow/gold")).To(Equal(1))
			Expect(do("GET", gated, "/allow/silver", "", http.Header{"X-Tier": {"silver"}}).Status).To(Equal(200))
			Expect(do("GET", gated, "/allow/none", "", nil).Status).To(Equal(200))
			Expect(authz.count("/allow/silver")).To(Equal(0))
			Expect(authz.count("/allow/none")).To(Equal(0))
			Expect(statValue(gs, "http.gated.ext_authz.disabled")).To(Equal("2"))
		})

		It("skips routes that disable it, and sends the merged context extensions and the route's metadata", func() {
			r := do("GET", port, "/public/page", "", nil)
			Expect(r.Status).To(Equal(200))
			Expect(authz.count("/public")).To(Equal(0))

			Expect(do("GET", port, "/allow/ctx", "", nil).Status).To(Equal(200))
			Expect(authz.last("/allow/ctx").GetAttributes().GetContextExtensions()).To(Equal(map[string]string{
				"level": "route", "vh": "yes", "tenant": "acme",
			}))
			// route_metadata_context_namespaces: the route's listed
			// namespaces, those it has.
			rmc := authz.last("/allow/ctx").GetAttributes().GetRouteMetadataContext().GetFilterMetadata()
			Expect(rmc).To(HaveLen(1))
			Expect(rmc["team"].AsMap()).To(Equal(map[string]any{"owner": "payments"}))
		})

		It("sends the request body with with_request_body and still forwards all of it", func() {
			r := do("POST", port, "/allow/body", "0123456789abcdef", nil)
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(ContainSubstring("body=0123456789abcdef"), "the upstream got the whole body")
			h := authz.last("/allow/body").GetAttributes().GetRequest().GetHttp()
			Expect(h.GetBody()).To(Equal("01234567"), "max_request_bytes with allow_partial_message")
			Expect(h.GetHeaders()).To(HaveKeyWithValue("content-length", "16"))
			Expect(h.GetHeaders()).To(HaveKeyWithValue("x-envoy-auth-partial-body", "true"))

			r = do("POST", strictPort, "/allow/small", "short body", nil)
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(ContainSubstring("body=short body"))
			h = authz.last("/allow/small").GetAttributes().GetRequest().GetHttp()
			Expect(h.GetBody()).To(Equal("short body"))
			Expect(h.GetHeaders()).To(HaveKeyWithValue("x-envoy-auth-partial-body", "false"))

			// Without allow_partial_message, a body over the limit is
			// answered 413 and never reaches the service.
			r = do("POST", strictPort, "/allow/big", strings.Repeat("x", 100), nil)
			Expect(r.Status).To(Equal(413))
			Expect(authz.count("/allow/big")).To(Equal(0))
			Expect(statValue(sc, "http.strict.downstream_rq_too_large")).To(Equal("1"))
		})

		It("loads emit_client_span with an http_service (the check's span is traced, see the tracing specs)", func() {
			cfg := extAuthzBootstrap(echoUpstream(), grpcPortForRefusal, "127.0.0.1:1",
				extAuthzListener("quiet", freePort(), `http_service: {server_uri: {uri: "http://authz", cluster: authz_http, timeout: 1s}}, emit_client_span: false`, ""))
			res, _ := validate("quiet.yaml", cfg)
			Expect(res.ExitCode).To(Equal(0), res.Stderr+res.Stdout)
		})

		It("asks a route's service override, vets the service's edits, and logs the check's latency", func() {
			httpAuthzAddr := httpTestUpstream(&httpAuthz{}, false)
			dir := newDir()
			vetLog := filepath.Join(dir, "vet.log")
			plain, vetted := freePort(), freePort()
			const perRoute = "type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute"
			override := func(spec proxySpec) proxySpec {
				// /override asks the HTTP service at path_override
				// /auth/deny/override instead of the gRPC one.
				spec.Routes = `[{match: {prefix: /override}, route: {cluster: up}, typed_per_filter_config: {envoy.filters.http.ext_authz: ` +
					withType(perRoute, `{check_settings: {http_service: {server_uri: {uri: "http://authz", cluster: authz_http, timeout: 2s}, path_override: /auth/deny/override}}}`) + `}},
					{match: {prefix: /}, route: {cluster: up}}]`
				return spec
			}
			vet := override(extAuthzListener("vetted", vetted,
				grpcAuthzFilter("validate_mutations: true, decoder_header_mutation_rules: {}, emit_filter_state_stats: true"), ""))
			vet.HCM = "{stat_prefix: vetted, access_log: [" + fileLog(vetLog,
				"%REQ(:PATH)% %RESPONSE_CODE% %RESPONSE_CODE_DETAILS% latency=%FILTER_STATE(envoy.filters.http.ext_authz:FIELD:latency_us)%\n") + "]}"
			vs := Start(dir, extAuthzBootstrap(echoUpstream(), grpcPortForRefusal, httpAuthzAddr,
				override(extAuthzListener("plain", plain, grpcAuthzFilter(""), "")), vet), "--file-flush-interval-msec", "100")

			// The override answers for its route; the gRPC service is not
			// asked.
			for _, p := range []int{plain, vetted} {
				r := do("GET", p, "/override/x", "", nil)
				Expect(r.Status).To(Equal(403))
				Expect(r.Body).To(Equal("denied by http"))
			}
			Expect(authz.count("/override")).To(Equal(0))

			// Without rules the service may set an Envoy-internal header;
			// the default rules leave it out.
			Expect(do("GET", plain, "/mutate/x", "", nil).Body).To(ContainSubstring("x-envoy-sneaky=1\n"))
			r := do("GET", vetted, "/mutate/x", "", nil)
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(ContainSubstring("x-authz-user=carol\n"))
			Expect(r.Body).To(ContainSubstring("x-envoy-sneaky=\n"))

			// validate_mutations: a header value with a line break rejects
			// the answer.
			Expect(do("GET", vetted, "/mutate/invalid", "", nil).Status).To(Equal(500))
			Expect(statValue(vs, "http.vetted.ext_authz.invalid")).To(Equal("1"))
			Eventually(func() string { b, _ := os.ReadFile(vetLog); return string(b) }).Should(And(
				MatchRegexp(`(?m)^/mutate/x 200 via_upstream latency=\d+$`),
				MatchRegexp(`(?m)^/mutate/invalid 500 ext_authz_invalid latency=\d+$`),
			))
		})
	})

	Context("with an HTTP authorization service", func() {
		var (
			authz *httpAuthz
			sc    *Sidecar
			port  int
		)

		BeforeEach(func() {
			authz = &httpAuthz{}
			authzAddr := httpTestUpstream(authz, false)
			port = freePort()
			sc = Start(newDir(), extAuthzBootstrap(echoUpstream(), 1, authzAddr,
				extAuthzListener("web", port, `http_service: {
					server_uri: {uri: "http://authz", cluster: authz_http, timeout: 0.5s},
					path_prefix: /auth,
					authorization_request: {allowed_headers: {patterns: [{exact: x-custom}]}, headers_to_add: [{key: x-from-proxy, value: outrigger}, {key: x-client, value: "%REQ(x-custom)%@%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"}]},
					authorization_response: {
						allowed_upstream_headers: {patterns: [{exact: x-authz-user}]},
						allowed_client_headers: {patterns: [{exact: x-deny}]},
						allowed_client_headers_on_success: {patterns: [{exact: x-client-ok}]}}},
				with_request_body: {max_request_bytes: 64}`, "")))
		})

		It("records the headers named by dynamic_metadata_from_headers as the filter's dynamic metadata", func() {
			dir := newDir()
			logPath := filepath.Join(dir, "md.log")
			httpService := `http_service: {server_uri: {uri: "http://authz", cluster: authz_http, timeout: 0.5s}, path_prefix: /auth,
				authorization_response: {dynamic_metadata_from_headers: {patterns: [{exact: x-authz-user}, {exact: x-deny}]}}}`
			mdPort, offPort := freePort(), freePort()
			md := extAuthzListener("md", mdPort, httpService, "")
			md.HCM = "{stat_prefix: md, access_log: [" + fileLog(logPath,
				"%REQ(:PATH)% user=%DYNAMIC_METADATA(envoy.filters.http.ext_authz:x-authz-user)% deny=%DYNAMIC_METADATA(envoy.filters.http.ext_authz:x-deny)% took=%DYNAMIC_METADATA(envoy.filters.http.ext_authz:ext_authz_duration)%\n") + "]}"
			off := extAuthzListener("ignored", offPort, httpService+", enable_dynamic_metadata_ingestion: false", "")
			authzAddr := httpTestUpstream(authz, false)
			ms := Start(dir, extAuthzBootstrap(echoUpstream(), 1, authzAddr, md, off), "--file-flush-interval-msec", "100")

			Expect(do("GET", mdPort, "/allow/md", "", nil).Status).To(Equal(200))
			Expect(do("GET", mdPort, "/deny/md", "", nil).Status).To(Equal(403))
			Eventually(func() string { b, _ := os.ReadFile(logPath); return string(b) }).
				Should(MatchRegexp(`(?m)^/allow/md user=bob deny=- took=\d+\n/deny/md user=- deny=http took=-$`))

			Expect(do("GET", offPort, "/allow/off", "", nil).Status).To(Equal(200))
			Expect(statValue(ms, "http.ignored.ext_authz.ignored_dynamic_metadata")).To(Equal("1"))
			Expect(statValue(ms, "http.md.ext_authz.ignored_dynamic_metadata")).To(Equal("0"))
		})

		It("allows on 200 with the allowed headers, sending the original method, prefixed path and allowed headers", func() {
			r := do("POST", port, "/allow/x?q=1", "payload", http.Header{
				"Authorization": {"Bearer t"}, "X-Custom": {"c"}, "X-Other": {"o"}, "X-Remove-Me": {"r"},
			})
			Expect(r.Status).To(Equal(200))
			Expect(r.Body).To(ContainSubstring("x-authz-user=bob\n"))
			Expect(r.Body).To(ContainSubstring("x-remove-me=\n"), "x-envoy-auth-headers-to-remove")
			Expect(r.Body).To(ContainSubstring("body=payload"))
			Expect(r.Header.Get("x-client-ok")).To(Equal("yes"))
			Expect(r.Header.Get("x-not-allowed")).To(BeEmpty())

			req, body := authz.last("/auth/allow/x")
			Expect(req).NotTo(BeNil())
			Expect(req.Method).To(Equal("POST"))
			Expect(req.RequestURI).To(Equal("/auth/allow/x?q=1"))
			Expect(req.Host).To(Equal(fmt.Sprintf("127.0.0.1:%d", port)))
			Expect(req.Header.Get("Authorization")).To(Equal("Bearer t"))
			Expect(req.Header.Get("X-Custom")).To(Equal("c"))
			Expect(req.Header.Get("X-From-Proxy")).To(Equal("outrigger"))
			// headers_to_add values render their command operators.
			Expect(req.Header.Get("X-Client")).To(Equal("c@127.0.0.1"))
			Expect(req.Header.Get("X-Other")).To(BeEmpty())
			Expect(body).To(Equal("payload"))
			Expect(statValue(sc, "http.web.ext_authz.ok")).To(Equal("1"))
		})

		It("denies with the service's status, body and allowed headers; a 5xx or a hang is an error", func() {
			r := do("GET", port, "/deny/x", "", nil)
			Expect(r.Status).To(Equal(403))
			Expect(r.Body).To(Equal("denied by http"))
			Expect(r.Header.Get("x-deny")).To(Equal("http"))
			Expect(statValue(sc, "http.web.ext_authz.denied")).To(Equal("1"))
			// charge_cluster_response_stats (default true): the route's
			// cluster counts the denial as an internal 403 response.
			Expect(statValue(sc, "cluster.up.upstream_rq_403")).To(Equal("1"))
			Expect(statValue(sc, "cluster.up.upstream_rq_4xx")).To(Equal("1"))
			Expect(statValue(sc, "cluster.up.internal.upstream_rq_403")).To(Equal("1"))

			Expect(do("GET", port, "/fail/x", "", nil).Status).To(Equal(403))
			Expect(do("GET", port, "/hang/x", "", nil).Status).To(Equal(403))
			Expect(statValue(sc, "http.web.ext_authz.error")).To(Equal("2"))
			keys := []string{}
			for k := range statValues(sc, "ext_authz") {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			Expect(keys).To(ContainElements("http.web.ext_authz.ok", "http.web.ext_authz.denied", "http.web.ext_authz.error",
				"http.web.ext_authz.disabled", "http.web.ext_authz.failure_mode_allowed"))
		})
	})
})
