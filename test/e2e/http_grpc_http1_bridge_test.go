package e2e

import (
	"bytes"
	"net"
	"net/http"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

var _ = Describe("The gRPC HTTP/1.1 bridge filter", func() {
	var port int

	BeforeEach(func() {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		// /test.Svc/Fail answers one message, then UNAVAILABLE in its
		// trailers.
		srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, st grpc.ServerStream) error {
			if err := st.RecvMsg(&healthpb.HealthCheckRequest{}); err != nil {
				return err
			}
			if err := st.SendMsg(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING}); err != nil {
				return err
			}
			return status.Error(codes.Unavailable, "down for maintenance")
		}))
		hs := health.NewServer()
		hs.SetServingStatus("shop", healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(srv, hs)
		go func() { _ = srv.Serve(lis) }()
		DeferCleanup(srv.Stop)
		port = freePort()
		Start(newDir(), proxySpec{
			Port: port,
			HCM:  "{stat_prefix: web}",
			Filters: "[" + httpFilter("envoy.filters.http.grpc_http1_bridge",
				"type.googleapis.com/envoy.extensions.filters.http.grpc_http1_bridge.v3.Config",
				"{upgrade_protobuf_to_grpc: true, ignore_query_parameters: true}") + "]",
			Clusters: []proxyCluster{{Name: "grpc", Port: portNum(lis.Addr().String()), Extra: h2cOptions()}},
		}.YAML())
	})

	// call posts body to the health service's Check over HTTP/1.1.
	call := func(path, contentType string, body []byte) Response {
		return httpDo(&http.Client{}, "POST", listenerURL(port, path), bytes.NewReader(body), http.Header{"Content-Type": {contentType}})
	}
	checkOf := func(service string) *healthpb.HealthCheckRequest {
		return &healthpb.HealthCheckRequest{Service: service}
	}

	It("answers an HTTP/1.1 gRPC call with grpc-status in the head and the body's length", func() {
		r := call("/grpc.health.v1.Health/Check?from=browser", "application/grpc", grpcWebRequest(checkOf("shop")))
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("Grpc-Status")).To(Equal("0"))
		Expect(r.Header.Get("Content-Length")).To(Equal(strconv.Itoa(len(r.Body))), "the held body's length is announced")
		Expect(len(r.Body)).To(BeNumerically(">", 5))
		var resp healthpb.HealthCheckResponse
		Expect(proto.Unmarshal([]byte(r.Body[5:]), &resp)).To(Succeed())
		Expect(resp.GetStatus()).To(Equal(healthpb.HealthCheckResponse_SERVING))
	})

	It("turns a gRPC error in the trailers into a 503 with grpc-status and grpc-message", func() {
		r := call("/test.Svc/Fail", "application/grpc", grpcWebRequest(checkOf("shop")))
		Expect(r.Status).To(Equal(503))
		Expect(r.Header.Get("Grpc-Status")).To(Equal("14")) // UNAVAILABLE
		Expect(r.Header.Get("Grpc-Message")).To(Equal("down for maintenance"))
		Expect(r.Header.Get("Content-Length")).To(Equal(strconv.Itoa(len(r.Body))))
	})

	It("passes a trailers-only answer as it is, as Envoy's filter does", func() {
		r := call("/grpc.health.v1.Health/Check", "application/grpc", grpcWebRequest(checkOf("unknown")))
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("Grpc-Status")).To(Equal("5")) // NOT_FOUND, in the head already
	})

	It("frames an application/x-protobuf request as gRPC and unframes its answer", func() {
		msg, err := proto.Marshal(checkOf("shop"))
		Expect(err).NotTo(HaveOccurred())
		r := call("/grpc.health.v1.Health/Check", "application/x-protobuf", msg)
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("Grpc-Status")).To(Equal("0"))
		var resp healthpb.HealthCheckResponse
		Expect(proto.Unmarshal([]byte(r.Body), &resp)).To(Succeed(), "the body is the bare message")
		Expect(resp.GetStatus()).To(Equal(healthpb.HealthCheckResponse_SERVING))
	})
})
