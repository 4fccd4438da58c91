package e2e

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const grpcReverseBridgeType = "type.googleapis.com/envoy.extensions.filters.http.grpc_http1_reverse_bridge.v3.FilterConfig"

// grpcFrame is msg in one uncompressed gRPC frame.
func grpcFrame(msg string) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

var _ = Describe("The grpc_http1_reverse_bridge filter", func() {
	It("sends gRPC calls to an HTTP/1.1 upstream as plain requests and frames its answers back, with grpc-status", func() {
		type seen struct{ contentType, accept, body string }
		got := make(chan seen, 10)
		up := httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got <- seen{r.Header.Get("Content-Type"), r.Header.Get("Accept"), string(b)}
			switch r.URL.Path {
			case "/pkg.Svc/Missing":
				w.Header().Set("Content-Type", "application/x-protobuf")
				w.WriteHeader(http.StatusNotFound)
			case "/pkg.Svc/Html":
				w.Header().Set("Content-Type", "text/html")
				_, _ = io.WriteString(w, "<p>no</p>")
			case "/pkg.Svc/Sized":
				w.Header().Set("Content-Type", "application/x-protobuf")
				w.Header().Set("X-Size", strconv.Itoa(len(b)+6))
				_, _ = io.WriteString(w, "sized:"+string(b))
			default:
				w.Header().Set("Content-Type", "application/x-protobuf")
				_, _ = io.WriteString(w, "reply:"+string(b))
			}
		}), false)
		port, sized := freePort(), freePort()
		off := `{envoy.filters.http.grpc_http1_reverse_bridge: ` + withType(
			"type.googleapis.com/envoy.extensions.filters.http.grpc_http1_reverse_bridge.v3.FilterConfigPerRoute", `{disabled: true}`) + `}`
		Start(newDir(), proxySpec{
			Port:   port,
			HCM:    `{stat_prefix: web}`,
			Routes: `[{match: {prefix: /pkg.Svc/Off}, route: {cluster: up}, typed_per_filter_config: ` + off + `}, {match: {prefix: /}, route: {cluster: up}}]`,
			Filters: "[" + httpFilter("envoy.filters.http.grpc_http1_reverse_bridge", grpcReverseBridgeType,
				`{content_type: application/x-protobuf, withhold_grpc_frames: true}`) + "]",
			Clusters: []proxyCluster{{Name: "up", Port: portNum(up)}},
			More: []proxySpec{{
				Port: sized, Listener: `{name: sized}`, HCM: `{stat_prefix: sized}`,
				Filters: "[" + httpFilter("envoy.filters.http.grpc_http1_reverse_bridge", grpcReverseBridgeType,
					`{content_type: application/x-protobuf, withhold_grpc_frames: true, response_size_header: x-size}`) + "]",
				Routes: `[{match: {prefix: /}, route: {cluster: up}}]`,
			}},
		}.YAML())

		h2c := new(http.Protocols)
		h2c.SetUnencryptedHTTP2(true)
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Protocols: h2c}}
		call := func(port int, method string, body []byte) (*http.Response, []byte) {
			GinkgoHelper()
			req, err := http.NewRequest(http.MethodPost, listenerURL(port, "/pkg.Svc/"+method), bytes.NewReader(body))
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Content-Type", "application/grpc+proto")
			req.Header.Set("TE", "trailers")
			resp, err := client.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			return resp, b
		}

		resp, body := call(port, "Echo", grpcFrame("hello"))
		Expect(<-got).To(Equal(seen{"application/x-protobuf", "application/x-protobuf", "hello"}))
		Expect(resp.StatusCode).To(Equal(200))
		Expect(resp.Header.Get("Content-Type")).To(Equal("application/grpc+proto"))
		Expect(body).To(Equal(grpcFrame("reply:hello")))
		Expect(resp.Trailer.Get("Grpc-Status")).To(Equal("0"))

		// The upstream's 404 is UNIMPLEMENTED, in a well-formed response.
		resp, body = call(port, "Missing", grpcFrame("x"))
		<-got
		Expect(resp.StatusCode).To(Equal(200))
		Expect(body).To(Equal(grpcFrame("")))
		Expect(resp.Trailer.Get("Grpc-Status") + resp.Header.Get("Grpc-Status")).To(Equal("12"))

		// Another content type is an error, in gRPC form.
		resp, _ = call(port, "Html", grpcFrame("x"))
		<-got
		Expect(resp.StatusCode).To(Equal(200))
		Expect(resp.Header.Get("Grpc-Status") + resp.Trailer.Get("Grpc-Status")).To(Equal("2"))
		Expect(resp.Header.Get("Grpc-Message") + resp.Trailer.Get("Grpc-Message")).To(Equal("envoy reverse bridge: upstream responded with unsupported content-type text/html, status code 200"))

		// A route with the filter disabled passes the call as it came.
		_, _ = call(port, "Off", grpcFrame("raw"))
		Expect(<-got).To(Equal(seen{"application/grpc+proto", "", string(grpcFrame("raw"))}))

		// response_size_header: the upstream says how long its answer is.
		resp, body = call(sized, "Sized", grpcFrame("abc"))
		<-got
		Expect(body).To(Equal(grpcFrame("sized:abc")))
		Expect(resp.Trailer.Get("Grpc-Status")).To(Equal("0"))
	})
})
