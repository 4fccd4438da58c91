package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// startMisbehavingHTTP1 serves one request per connection on raw sockets,
// by its path: /close answers 200 with "connection: close", /garbage
// answers bytes that are no HTTP response, /drop closes without a word.
func startMisbehavingHTTP1() int {
	return startTCPServer(func(c *net.TCPConn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		switch req.URL.Path {
		case "/close":
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
		case "/garbage":
			_, _ = io.WriteString(c, "this is not HTTP\r\n\r\n")
		}
	})
}

// startScriptedH2 serves h2c on 127.0.0.1, by each request's path: /reset
// resets the stream (INTERNAL_ERROR), /hang never answers, /goaway sends
// a GOAWAY that keeps the stream and closes the connection, anything else
// is answered 200.
func startScriptedH2() int {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
				preface := make([]byte, len(http2.ClientPreface))
				if _, err := io.ReadFull(nc, preface); err != nil {
					return
				}
				fr := http2.NewFramer(nc, bufio.NewReader(nc))
				if fr.WriteSettings() != nil {
					return
				}
				dec := hpack.NewDecoder(4096, nil)
				var blk strings.Builder
				enc := hpack.NewEncoder(&stringWriter{&blk})
				for range 10_000 {
					f, err := fr.ReadFrame()
					if err != nil {
						return
					}
					switch f := f.(type) {
					case *http2.SettingsFrame:
						if !f.IsAck() {
							_ = fr.WriteSettingsAck()
						}
					case *http2.HeadersFrame:
						fields, err := dec.DecodeFull(f.HeaderBlockFragment())
						if err != nil {
							return
						}
						path := ""
						for _, hf := range fields {
							if hf.Name == ":path" {
								path = hf.Value
							}
						}
						switch path {
						case "/reset":
							_ = fr.WriteRSTStream(f.StreamID, http2.ErrCodeInternal)
						case "/hang":
						case "/goaway":
							_ = fr.WriteGoAway(f.StreamID, http2.ErrCodeNo, nil)
							return
						default:
							blk.Reset()
							_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
							_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: []byte(blk.String()), EndHeaders: true, EndStream: true})
						}
					}
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

var _ = Describe("Cluster connection and stream stats", func() {
	get := func(port int, path string) int {
		GinkgoHelper()
		resp, err := (&http.Client{Timeout: 20 * time.Second}).Get("http://127.0.0.1:" + strconv.Itoa(port) + path)
		Expect(err).NotTo(HaveOccurred())
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	expectStats := func(s *Sidecar, cluster string, want map[string]string) {
		GinkgoHelper()
		for name, v := range want {
			Eventually(func() string { return statValue(s, "cluster."+cluster+"."+name) }).Should(Equal(v), name)
		}
	}

	It("counts an HTTP/1.1 cluster's announced closes, protocol errors and connections closed with a request on them", func() {
		up := startMisbehavingHTTP1()
		port := freePort()
		s := Start(newDir(), proxySpec{Port: port, Clusters: []proxyCluster{{Name: "web", Port: up}}}.YAML())
		// Before any traffic, Envoy's cluster stats all exist at 0.
		expectStats(s, "web", map[string]string{
			"upstream_cx_destroy_with_active_rq": "0", "upstream_cx_close_notify": "0", "upstream_cx_protocol_error": "0",
			"upstream_rq_rx_reset": "0", "upstream_rq_tx_reset": "0", "upstream_cx_pool_overflow": "0",
			"upstream_internal_redirect_succeeded_total": "0", "upstream_internal_redirect_failed_total": "0",
			"upstream_rq_maintenance_mode": "0", "upstream_flow_control_paused_reading_total": "0",
			"upstream_cx_connect_attempts_exceeded": "0", "original_dst_host_invalid": "0",
		})
		Expect(statValues(s, "^cluster\\.web\\.upstream_rq_per_cx$")).To(HaveKey("cluster.web.upstream_rq_per_cx"))

		Expect(get(port, "/close")).To(Equal(200))
		Expect(get(port, "/garbage")).To(Equal(502))
		Expect(get(port, "/drop")).To(Equal(503))
		expectStats(s, "web", map[string]string{
			"upstream_cx_close_notify":                  "1",
			"upstream_cx_protocol_error":                "1",
			"upstream_cx_destroy_with_active_rq":        "2",
			"upstream_cx_destroy_local_with_active_rq":  "1", // the garbage: the proxy closed
			"upstream_cx_destroy_remote_with_active_rq": "1", // the drop: the host closed
			"upstream_cx_destroy":                       "3",
			"upstream_rq_rx_reset":                      "0", // HTTP/1.1 streams are not counted, as in Envoy
		})
	})

	It("counts an HTTP/2 cluster's stream resets by each side, GOAWAYs and connections closed with streams open", func() {
		up := startScriptedH2()
		port := freePort()
		s := Start(newDir(), proxySpec{
			Port: port,
			Routes: `[{match: {prefix: /hang}, route: {cluster: h2, timeout: 0.3s}},
				{match: {prefix: /}, route: {cluster: h2}}]`,
			Clusters: []proxyCluster{{Name: "h2", Port: up,
				Extra: httpProtocolOptions(`{explicit_http_config: {http2_protocol_options: {}}}`)}},
		}.YAML())
		Expect(get(port, "/ok")).To(Equal(200))
		Expect(get(port, "/reset")).To(Equal(503))
		Expect(get(port, "/hang")).To(Equal(504)) // the proxy resets the stream at the route timeout
		expectStats(s, "h2", map[string]string{
			"upstream_rq_rx_reset":               "1",
			"upstream_rq_tx_reset":               "1",
			"upstream_cx_close_notify":           "0",
			"upstream_cx_destroy_with_active_rq": "0",
		})
		Expect(get(port, "/goaway")).To(Equal(503))
		expectStats(s, "h2", map[string]string{
			"upstream_cx_close_notify":                  "1",
			"upstream_cx_destroy_with_active_rq":        "1",
			"upstream_cx_destroy_remote_with_active_rq": "1",
			"upstream_cx_destroy_local_with_active_rq":  "0",
			"upstream_rq_rx_reset":                      "1",
			"upstream_rq_tx_reset":                      "1",
		})
	})
})
