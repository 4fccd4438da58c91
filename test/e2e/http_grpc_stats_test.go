package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
)

const grpcStatsType = "type.googleapis.com/envoy.extensions.filters.http.grpc_stats.v3.FilterConfig"

// grpcCalls makes, through the sidecar's listener on port, a unary
// health check that succeeds, one that fails with NOT_FOUND (a
// trailers-only answer), and a reflection stream of three requests and
// three responses.
func grpcCalls(port int) {
	GinkgoHelper()
	conn, err := grpc.NewClient(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), grpc.WithTransportCredentials(insecure.NewCredentials()))
	Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hc := healthpb.NewHealthClient(conn)
	resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "shop"})
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.GetStatus()).To(Equal(healthpb.HealthCheckResponse_SERVING))
	_, err = hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"})
	Expect(status.Code(err)).To(Equal(codes.NotFound), "%v", err)

	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	Expect(err).NotTo(HaveOccurred())
	for range 3 {
		Expect(stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})).To(Succeed())
		_, err := stream.Recv()
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(stream.CloseSend()).To(Succeed())
	_, err = stream.Recv()
	Expect(err).To(Equal(io.EOF))
}

var _ = Describe("The grpc_stats filter", func() {
	It("counts a grpc-go server's calls per method, or per cluster with an allowlist, with message counts and the upstream's time", func() {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		srv := grpc.NewServer()
		hs := health.NewServer()
		hs.SetServingStatus("shop", healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(srv, hs)
		reflection.Register(srv)
		go func() { _ = srv.Serve(lis) }()
		DeferCleanup(srv.Stop)

		all, listed := freePort(), freePort()
		cluster := proxyCluster{Name: "grpc", Port: portNum(lis.Addr().String()), Extra: `{alt_stat_name: grpc_up, ` + unwrapFlow(h2cOptions()) + `}`}
		s := Start(newDir(), proxySpec{
			Port: all,
			Filters: "[" + httpFilter("envoy.filters.http.grpc_stats", grpcStatsType,
				`{stats_for_all_methods: true, enable_upstream_stats: true, replace_dots_in_grpc_service_name: true}`) + "]",
			Clusters: []proxyCluster{cluster},
			More: []proxySpec{{
				Port:     listed,
				Listener: `{name: listed}`,
				Filters: "[" + httpFilter("envoy.filters.http.grpc_stats", grpcStatsType,
					`{individual_method_stats_allowlist: {services: [{name: grpc.health.v1.Health, method_names: [Check]}]}}`) + "]",
				Routes: `[{match: {prefix: /}, route: {cluster: grpc}}]`,
			}},
		}.YAML())

		grpcCalls(all)
		const check = "cluster.grpc_up.grpc.grpc_health_v1_Health.Check."
		const refl = "cluster.grpc_up.grpc.grpc_reflection_v1_ServerReflection.ServerReflectionInfo."
		Expect(statValues(s, `^cluster\.grpc_up\.grpc\.`)).To(SatisfyAll(
			HaveKeyWithValue(check+"success", "1"), HaveKeyWithValue(check+"failure", "1"),
			HaveKeyWithValue(check+"total", "2"), HaveKeyWithValue(check+"0", "1"), HaveKeyWithValue(check+"5", "1"),
			HaveKeyWithValue(check+"request_message_count", "2"), HaveKeyWithValue(check+"response_message_count", "1"),
			HaveKeyWithValue(refl+"success", "1"), HaveKeyWithValue(refl+"total", "1"),
			HaveKeyWithValue(refl+"request_message_count", "3"), HaveKeyWithValue(refl+"response_message_count", "3"),
			Not(HaveKey("cluster.grpc_up.grpc.success")),
		))
		hist := statValues(s, `upstream_rq_time$`)
		Expect(hist).To(HaveKey(check + "upstream_rq_time"))
		Expect(hist[check+"upstream_rq_time"]).NotTo(ContainSubstring("No recorded values"))
		Expect(hist).To(HaveKey(refl + "upstream_rq_time"))

		grpcCalls(listed)
		const listedCheck = "cluster.grpc_up.grpc.grpc.health.v1.Health.Check."
		Expect(statValues(s, `^cluster\.grpc_up\.grpc\.`)).To(SatisfyAll(
			HaveKeyWithValue(listedCheck+"success", "1"), HaveKeyWithValue(listedCheck+"failure", "1"),
			// The reflection method is not on the list: the cluster's
			// own grpc stats count it.
			HaveKeyWithValue("cluster.grpc_up.grpc.success", "1"), HaveKeyWithValue("cluster.grpc_up.grpc.total", "1"),
			HaveKeyWithValue("cluster.grpc_up.grpc.request_message_count", "3"),
			HaveKeyWithValue("cluster.grpc_up.grpc.response_message_count", "3"),
			Not(HaveKey(listedCheck+"upstream_rq_time")),
		))
	})

	It("leaves each call's message counts in the filter state with emit_filter_state, for %FILTER_STATE%", func() {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		srv := grpc.NewServer()
		hs := health.NewServer()
		hs.SetServingStatus("shop", healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(srv, hs)
		reflection.Register(srv)
		go func() { _ = srv.Serve(lis) }()
		DeferCleanup(srv.Stop)

		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			HCM: `{access_log: [{name: envoy.access_loggers.stdout, typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog,
				log_format: {json_format: {path: "%REQ(:PATH)%", plain: "%FILTER_STATE(envoy.filters.http.grpc_stats:PLAIN)%", typed: "%FILTER_STATE(envoy.filters.http.grpc_stats)%"}}}}]}`,
			Filters:  "[" + httpFilter("envoy.filters.http.grpc_stats", grpcStatsType, `{emit_filter_state: true}`) + "]",
			Clusters: []proxyCluster{{Name: "grpc", Port: portNum(lis.Addr().String()), Extra: unwrapFlow(h2cOptions())}},
		}.YAML(), "--file-flush-interval-msec", "50")

		grpcCalls(port)
		const refl = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
		Eventually(func() map[string]any { return jsonLine(s.Stdout(), refl) }, 10*time.Second).ShouldNot(BeNil())
		Expect(jsonLine(s.Stdout(), refl)).To(SatisfyAll(
			HaveKeyWithValue("plain", "3,3"),
			HaveKeyWithValue("typed", map[string]any{"requestMessageCount": "3", "responseMessageCount": "3"}),
		))
		// The health checks: one request message each, one response
		// message for the call that succeeded, none for the trailers-only
		// NOT_FOUND.
		var plains []any
		for _, line := range strings.Split(s.Stdout(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["path"] == "/grpc.health.v1.Health/Check" {
				plains = append(plains, m["plain"])
			}
		}
		Expect(plains).To(ConsistOf("1,1", "1,0"))
	})
})
