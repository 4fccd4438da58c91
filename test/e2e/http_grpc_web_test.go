package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"net"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
)

// grpcWebBootstrap is a listener on port with the gRPC-Web filter, routing
// to the gRPC (h2c) server at up.
func grpcWebBootstrap(port int, up string) string {
	return proxySpec{
		Port:     port,
		HCM:      "{stat_prefix: web}",
		Filters:  "[" + httpFilter("envoy.filters.http.grpc_web", "type.googleapis.com/envoy.extensions.filters.http.grpc_web.v3.GrpcWeb", "") + "]",
		Clusters: []proxyCluster{{Name: "grpc", Port: portNum(up), Extra: h2cOptions()}},
	}.YAML()
}

// grpcWebFrames splits a gRPC-Web body into its message and trailer
// frames' payloads.
func grpcWebFrames(body []byte) (messages [][]byte, trailers map[string]string) {
	GinkgoHelper()
	trailers = map[string]string{}
	for len(body) > 0 {
		Expect(len(body)).To(BeNumerically(">=", 5), "a frame header is cut")
		flag, n := body[0], binary.BigEndian.Uint32(body[1:5])
		Expect(uint32(len(body)-5)).To(BeNumerically(">=", n), "a frame is cut")
		payload := body[5 : 5+n]
		body = body[5+n:]
		if flag&0x80 == 0 {
			messages = append(messages, payload)
			continue
		}
		for _, line := range strings.Split(strings.TrimRight(string(payload), "\r\n"), "\r\n") {
			k, v, ok := strings.Cut(line, ":")
			Expect(ok).To(BeTrue(), "trailer line %q", line)
			trailers[k] = v
		}
	}
	return messages, trailers
}

// grpcWebRequest frames a message as a gRPC-Web request body.
func grpcWebRequest(m proto.Message) []byte {
	GinkgoHelper()
	b, err := proto.Marshal(m)
	Expect(err).NotTo(HaveOccurred())
	frame := make([]byte, 5, 5+len(b))
	binary.BigEndian.PutUint32(frame[1:], uint32(len(b)))
	return append(frame, b...)
}

var _ = Describe("The gRPC-Web filter", func() {
	var (
		sc   *Sidecar
		port int
	)

	BeforeEach(func() {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		srv := grpc.NewServer()
		hs := health.NewServer()
		hs.SetServingStatus("shop", healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(srv, hs)
		go func() { _ = srv.Serve(lis) }()
		DeferCleanup(srv.Stop)
		port = freePort()
		sc = Start(newDir(), grpcWebBootstrap(port, lis.Addr().String()))
	})

	call := func(c *http.Client, contentType string, body []byte, accept string) Response {
		GinkgoHelper()
		h := http.Header{"Content-Type": {contentType}, "X-Grpc-Web": {"1"}}
		if accept != "" {
			h.Set("Accept", accept)
		}
		return httpDo(c, http.MethodPost, listenerURL(port, "/grpc.health.v1.Health/Check"), bytes.NewReader(body), h)
	}

	for name, c := range rawClients() {
		It("carries a unary call to a grpc-go server and its trailers back in the body, over "+name, func() {
			r := call(c, "application/grpc-web+proto", grpcWebRequest(&healthpb.HealthCheckRequest{Service: "shop"}), "")
			Expect(r.Status).To(Equal(http.StatusOK))
			Expect(r.Header.Get("Content-Type")).To(Equal("application/grpc-web+proto"))
			msgs, trailers := grpcWebFrames([]byte(r.Body))
			Expect(msgs).To(HaveLen(1))
			var resp healthpb.HealthCheckResponse
			Expect(proto.Unmarshal(msgs[0], &resp)).To(Succeed())
			Expect(resp.GetStatus()).To(Equal(healthpb.HealthCheckResponse_SERVING))
			Expect(trailers).To(HaveKeyWithValue("grpc-status", "0"))
			Expect(r.Header.Get("Grpc-Status")).To(BeEmpty(), "the trailers came as headers")
		})

		It("decodes and encodes the base64 -text form, over "+name, func() {
			body := base64.StdEncoding.EncodeToString(grpcWebRequest(&healthpb.HealthCheckRequest{Service: "shop"}))
			r := call(c, "application/grpc-web-text", []byte(body), "application/grpc-web-text")
			Expect(r.Status).To(Equal(http.StatusOK))
			Expect(r.Header.Get("Content-Type")).To(Equal("application/grpc-web-text+proto"))
			raw, err := base64.StdEncoding.DecodeString(r.Body)
			Expect(err).NotTo(HaveOccurred(), "the body is not base64: %q", r.Body)
			msgs, trailers := grpcWebFrames(raw)
			Expect(msgs).To(HaveLen(1))
			var resp healthpb.HealthCheckResponse
			Expect(proto.Unmarshal(msgs[0], &resp)).To(Succeed())
			Expect(resp.GetStatus()).To(Equal(healthpb.HealthCheckResponse_SERVING))
			Expect(trailers).To(HaveKeyWithValue("grpc-status", "0"))
		})
	}

	It("passes a failed call's status, refuses bad base64, and counts per method", func() {
		c := rawClients()["HTTP/2"]
		r := call(c, "application/grpc-web", grpcWebRequest(&healthpb.HealthCheckRequest{Service: "nope"}), "")
		Expect(r.Status).To(Equal(http.StatusOK))
		status := r.Header.Get("Grpc-Status")
		if status == "" {
			_, trailers := grpcWebFrames([]byte(r.Body))
			status = trailers["grpc-status"]
		}
		Expect(status).To(Equal("5"), "NOT_FOUND for an unknown service")

		r = call(c, "application/grpc-web-text", []byte("not base64!"), "")
		Expect(r.Status).To(Equal(http.StatusBadRequest))
		Expect(r.Header.Get("Grpc-Status")).To(Equal("13"), "INTERNAL for a 400")
		_, trailers := grpcWebFrames([]byte(r.Body))
		Expect(trailers).To(HaveKeyWithValue("grpc-message", "Bad gRPC-web request, invalid base64 data."))

		ok := call(c, "application/grpc-web", grpcWebRequest(&healthpb.HealthCheckRequest{Service: "shop"}), "")
		Expect(ok.Status).To(Equal(http.StatusOK))
		const p = "cluster.grpc.grpc-web.grpc.health.v1.Health.Check."
		Eventually(func() string { return httpStat(sc, p+"total") }, 5*time.Second, 50*time.Millisecond).Should(Equal("2"))
		Expect(httpStat(sc, p+"success")).To(Equal("1"))
		Expect(httpStat(sc, p+"failure")).To(Equal("1"))
		Expect(httpStat(sc, p+"0")).To(Equal("1"))
		Expect(httpStat(sc, p+"5")).To(Equal("1"))
	})
})
