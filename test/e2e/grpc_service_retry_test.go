package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
)

// flakyAuthz is a gRPC Authorization service that fails the first check
// of each path with UNAVAILABLE and allows the next ones; it keeps the
// metadata of every call, by path.
type flakyAuthz struct {
	authv3.UnimplementedAuthorizationServer
	mu    sync.Mutex
	calls map[string][]metadata.MD
}

func (f *flakyAuthz) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	path := req.GetAttributes().GetRequest().GetHttp().GetPath()
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.calls[path] = append(f.calls[path], md)
	n := len(f.calls[path])
	f.mu.Unlock()
	if n == 1 {
		return nil, grpcstatus.Error(codes.Unavailable, "warming up")
	}
	return &authv3.CheckResponse{Status: &status.Status{Code: int32(codes.OK)}}, nil
}

// of returns the metadata of the calls for path.
func (f *flakyAuthz) of(path string) []metadata.MD {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]metadata.MD(nil), f.calls[path]...)
}

var _ = Describe("A gRPC service's client settings", func() {
	var (
		authz                                      *flakyAuthz
		retryPort, plainPort, skipPort, shadowPort int
		shadowLog                                  string
		client                                     = &http.Client{Timeout: 10 * time.Second}
	)

	BeforeEach(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		authz = &flakyAuthz{calls: map[string][]metadata.MD{}}
		srv := grpc.NewServer()
		authv3.RegisterAuthorizationServer(srv, authz)
		go func() { _ = srv.Serve(ln) }()
		DeferCleanup(srv.Stop)
		grpcPort := ln.Addr().(*net.TCPAddr).Port

		up := echoUpstream()
		dir := newDir()
		retryPort, plainPort, skipPort, shadowPort = freePort(), freePort(), freePort(), freePort()
		shadowLog = filepath.Join(dir, "shadow.log")
		shadow := extAuthzListener("shadow", shadowPort, "grpc_service: {envoy_grpc: {cluster_name: authz_grpc}, timeout: 5s}, transport_api_version: V3, shadow_mode: true, status_on_error: {code: 503}", "")
		shadow.HCM = "{stat_prefix: shadow, access_log: [" + fileLog(shadowLog, "%REQ(:PATH)% %RESPONSE_CODE% %FILTER_STATE(envoy.filters.http.ext_authz.shadow:TYPED)%\n") + "]}"
		service := func(envoyGrpc, extra string) string {
			return "grpc_service: {envoy_grpc: {cluster_name: authz_grpc" + envoyGrpc + "}, timeout: 5s" + extra + "}, transport_api_version: V3"
		}
		cfg := extAuthzBootstrap(up, grpcPort, "127.0.0.1:1",
			extAuthzListener("retry", retryPort, service("", ", retry_policy: {retry_on: 'unavailable', num_retries: 2, retry_back_off: {base_interval: 0.01s}}"), ""),
			extAuthzListener("plain", plainPort, service("", ""), ""),
			extAuthzListener("skip", skipPort, service(", skip_envoy_headers: true, max_receive_message_length: 1048576", ""), ""),
			shadow,
		)
		Start(dir, cfg, "--file-flush-interval-msec", "100")
	})

	It("retries the call the service failed with a retry_on status, as Envoy's async client", func() {
		r := httpDo(client, "GET", listenerURL(retryPort, "/retried"), nil, nil)
		Expect(r.Status).To(Equal(200), "the second attempt allowed it")
		Expect(authz.of("/retried")).To(HaveLen(2))

		r = httpDo(client, "GET", listenerURL(plainPort, "/not-retried"), nil, nil)
		Expect(r.Status).To(Equal(403), "without retry_policy the failed check is an error")
		Expect(authz.of("/not-retried")).To(HaveLen(1))
	})

	It("in ext_authz's shadow_mode, records the decision in the <name>.shadow filter state and lets the request through", func() {
		r := httpDo(client, "GET", listenerURL(shadowPort, "/shadowed"), nil, nil)
		Expect(r.Status).To(Equal(200), "the failed check is not enforced")
		r = httpDo(client, "GET", listenerURL(shadowPort, "/shadowed"), nil, nil)
		Expect(r.Status).To(Equal(200))
		Eventually(func() string { b, _ := os.ReadFile(shadowLog); return string(b) }).Should(And(
			ContainSubstring(`/shadowed 200 {"checkResult":"ERROR","statusCode":503}`),
			ContainSubstring(`/shadowed 200 {"checkResult":"OK","statusCode":200}`)))
	})

	It("sends x-envoy-internal and the server's address in x-forwarded-for, unless skip_envoy_headers", func() {
		httpDo(client, "GET", listenerURL(plainPort, "/headers"), nil, nil)
		calls := authz.of("/headers")
		Expect(calls).NotTo(BeEmpty())
		Expect(calls[0].Get("x-envoy-internal")).To(Equal([]string{"true"}))
		Expect(calls[0].Get("x-forwarded-for")).To(HaveLen(1))
		Expect(net.ParseIP(calls[0].Get("x-forwarded-for")[0])).NotTo(BeNil())

		httpDo(client, "GET", listenerURL(skipPort, "/skipped"), nil, nil)
		calls = authz.of("/skipped")
		Expect(calls).NotTo(BeEmpty())
		for _, md := range calls {
			for k := range md {
				Expect(strings.HasPrefix(k, "x-envoy-") || k == "x-forwarded-for").To(BeFalse(), "header %s sent with skip_envoy_headers", k)
			}
		}
	})
})

var _ = Describe("The external authorization filter's HTTP service retry_policy", func() {
	It("tries a check again after a 5xx, as Envoy's converted retry policy, and sends the body again", func() {
		var mu sync.Mutex
		tries := map[string]int{}
		bodies := map[string][]string{}
		authz := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			tries[r.URL.Path]++
			n := tries[r.URL.Path]
			bodies[r.URL.Path] = append(bodies[r.URL.Path], string(b))
			mu.Unlock()
			if n == 1 {
				w.WriteHeader(503)
			}
		}), false)
		count := func(path string) int {
			mu.Lock()
			defer mu.Unlock()
			return tries[path]
		}
		up := echoUpstream()
		retryPort, plainPort := freePort(), freePort()
		service := func(extra string) string {
			return `http_service: {server_uri: {uri: "http://authz", cluster: authz_http, timeout: 5s}` + extra + `}, with_request_body: {max_request_bytes: 64}`
		}
		cfg := extAuthzBootstrap(up, freePort(), "127.0.0.1:"+strconv.Itoa(portNum(authz)),
			extAuthzListener("retry", retryPort, service(`, retry_policy: {num_retries: 2, retry_back_off: {base_interval: 0.01s}}`), ""),
			extAuthzListener("plain", plainPort, service(""), ""),
		)
		Start(newDir(), cfg)
		client := &http.Client{Timeout: 10 * time.Second}

		r := httpDo(client, "POST", listenerURL(retryPort, "/retried"), strings.NewReader("payload"), nil)
		Expect(r.Status).To(Equal(200), "the second try allowed it")
		Expect(count("/retried")).To(Equal(2))
		mu.Lock()
		Expect(bodies["/retried"]).To(Equal([]string{"payload", "payload"}))
		mu.Unlock()

		r = httpDo(client, "POST", listenerURL(plainPort, "/once"), strings.NewReader("payload"), nil)
		Expect(r.Status).To(Equal(403), "without retry_policy the 5xx is an error")
		Expect(count("/once")).To(Equal(1))
	})
})
