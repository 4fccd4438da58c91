package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	datatapv3 "github.com/envoyproxy/go-control-plane/envoy/data/tap/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// rawBufferSocket is the raw_buffer transport socket (plaintext).
const rawBufferSocket = `{name: envoy.transport_sockets.raw_buffer, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer}}`

// tapSocket is a tap transport socket with common_config common (YAML
// flow) over the transport socket inner, with extra Tap fields.
func tapSocket(common, inner, extra string) string {
	return `{name: envoy.transport_sockets.tap, typed_config: {"@type": type.googleapis.com/envoy.extensions.transport_sockets.tap.v3.Tap,
  common_config: ` + common + `, transport_socket: ` + inner + extra + `}}`
}

// staticTap is a static_config tapping every connection to file_per_tap
// files under prefix in format, with extra output_config fields.
func staticTap(prefix, format, extra string) string {
	return `{static_config: {match: {any_match: true}, output_config: {sinks: [{format: ` + format + `, file_per_tap: {path_prefix: "` + prefix + `"}}]` + extra + `}}}`
}

// rawGet sends one GET for path with Connection: close over c, reads
// the whole answer and closes c.
func rawGet(c net.Conn, path string) string {
	GinkgoHelper()
	defer c.Close()
	Expect(c.SetDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
	_, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: tap.test\r\nConnection: close\r\n\r\n", path)
	Expect(err).NotTo(HaveOccurred())
	b, err := io.ReadAll(c)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// socketFile waits for the one file matching pattern to hold a whole
// trace (a file is created before its trace is written into it) and
// returns its bytes.
func socketFile(pattern string, whole func([]byte) bool) []byte {
	GinkgoHelper()
	var out []byte
	Eventually(func(g Gomega) {
		files, _ := filepath.Glob(pattern)
		g.Expect(files).To(HaveLen(1))
		b, err := os.ReadFile(files[0])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(whole(b)).To(BeTrue(), "incomplete trace in %s", files[0])
		out = b
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	return out
}

// eventData is the data of a read or write event, and which it is.
func eventData(ev *datatapv3.SocketEvent) (string, string) {
	switch {
	case ev.GetRead() != nil:
		b := ev.GetRead().GetData()
		return "read", b.GetAsString() + string(b.GetAsBytes())
	case ev.GetWrite() != nil:
		b := ev.GetWrite().GetData()
		return "write", b.GetAsString() + string(b.GetAsBytes())
	case ev.GetClosed() != nil:
		return "closed", ""
	}
	return "", ""
}

// joined concatenates the data of the events of kind.
func joined(events []*datatapv3.SocketEvent, kind string) string {
	var sb strings.Builder
	for _, ev := range events {
		if k, d := eventData(ev); k == kind {
			sb.WriteString(d)
		}
	}
	return sb.String()
}

// socketTapStream is an attached /tap whose traces are decoded as
// TraceWrapper messages.
type socketTapStream struct {
	traces chan *datatapv3.TraceWrapper
	cancel context.CancelFunc
}

// attachSocketTap posts body to /tap and decodes the open response's
// traces in the background.
func attachSocketTap(sc *Sidecar, body string) *socketTapStream {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+sc.Admin+"/tap", strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	s := &socketTapStream{traces: make(chan *datatapv3.TraceWrapper, 64), cancel: cancel}
	go func() {
		defer GinkgoRecover()
		defer resp.Body.Close()
		defer close(s.traces)
		for dec := json.NewDecoder(resp.Body); ; {
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return
			}
			w := &datatapv3.TraceWrapper{}
			Expect(protojson.Unmarshal(raw, w)).To(Succeed(), string(raw))
			s.traces <- w
		}
	}()
	return s
}

var _ = Describe("The tap transport socket", func() {
	var (
		up   string
		port int
		dir  string
	)

	BeforeEach(func() {
		up = httpTestUpstream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "upstream saw "+r.URL.Path)
		}), false)
		port = freePort()
		dir = newDir()
	})

	upCluster := func(ts string) string {
		return tlsCluster("up", portNum(up), ts, "")
	}

	It("records a plaintext chain's bytes both ways in a socket_buffered_trace file per connection", func() {
		prefix := filepath.Join(dir, "conn")
		chain := withTransportSocket(routeToCluster("tapped", "up"), tapSocket(staticTap(prefix, "JSON_BODY_AS_STRING", ", max_buffered_tx_bytes: 12"), rawBufferSocket,
			`, socket_tap_config: {stats_prefix: plain}`))
		sc := Start(dir, tlsBootstrap(port, "", []string{chain}, upCluster(rawBufferSocket)))

		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		Expect(err).NotTo(HaveOccurred())
		client := c.LocalAddr().(*net.TCPAddr)
		Expect(rawGet(c, "/plain")).To(HaveSuffix("upstream saw /plain"))

		var w datatapv3.TraceWrapper
		socketFile(prefix+"_*.json", func(b []byte) bool { return protojson.Unmarshal(b, &w) == nil })
		t := w.GetSocketBufferedTrace()
		Expect(t).NotTo(BeNil(), w.String())
		Expect(joined(t.GetEvents(), "read")).To(HavePrefix("GET /plain HTTP/1.1\r\n"))
		Expect(joined(t.GetEvents(), "read")).To(ContainSubstring("Connection: close"))
		// max_buffered_tx_bytes: 12 keeps the status line's start.
		Expect(joined(t.GetEvents(), "write")).To(Equal("HTTP/1.1 200"))
		Expect(t.GetWriteTruncated()).To(BeTrue())
		Expect(t.GetReadTruncated()).To(BeFalse())
		Expect(t.GetConnection().GetRemoteAddress().GetSocketAddress().GetPortValue()).To(BeEquivalentTo(client.Port))
		Expect(t.GetConnection().GetLocalAddress().GetSocketAddress().GetPortValue()).To(BeEquivalentTo(port))
		Expect(t.GetEvents()[0].GetTimestamp().AsTime()).To(BeTemporally("~", time.Now(), time.Minute))
		files, _ := filepath.Glob(prefix + "_*.json")
		Expect(files[0]).To(HaveSuffix(fmt.Sprintf("_%d.json", t.GetTraceId())))
		// The counter follows the file's write.
		Eventually(func() string {
			return statValue(sc, fmt.Sprintf("listener.127.0.0.1_%d.transport.tap.plain.buffered_submit", port))
		}, 5*time.Second).Should(Equal("1"))
	})

	It("records what TLS decrypted when it wraps the TLS transport socket", func() {
		f := newTLSFiles(dir)
		prefix := filepath.Join(dir, "tls")
		chain := withTransportSocket(routeToCluster("secure", "up"), tapSocket(staticTap(prefix, "PROTO_BINARY", ""), f.transportSocket("", ""), ""))
		Start(dir, tlsBootstrap(port, "", []string{chain}, upCluster(rawBufferSocket)))

		c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: f.caPool, ServerName: "localhost", NextProtos: []string{"http/1.1"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(rawGet(c, "/secret")).To(HaveSuffix("upstream saw /secret"))

		var w datatapv3.TraceWrapper
		// A file read while it is written may hold a shorter message that
		// still decodes: wait for the response's end.
		socketFile(prefix+"_*.pb", func(b []byte) bool {
			return proto.Unmarshal(b, &w) == nil && strings.HasSuffix(joined(w.GetSocketBufferedTrace().GetEvents(), "write"), "upstream saw /secret")
		})
		t := w.GetSocketBufferedTrace()
		Expect(joined(t.GetEvents(), "read")).To(HavePrefix("GET /secret HTTP/1.1\r\n"))
		Expect(joined(t.GetEvents(), "write")).To(HavePrefix("HTTP/1.1 200 OK\r\n"))
		Expect(joined(t.GetEvents(), "write")).To(HaveSuffix("upstream saw /secret"))
	})

	It("streams an upstream connection's segments from a cluster's tap", func() {
		prefix := filepath.Join(dir, "up")
		chain := routeToCluster("front", "up")
		sc := Start(dir, tlsBootstrap(port, "", []string{chain},
			upCluster(tapSocket(staticTap(prefix, "PROTO_BINARY_LENGTH_DELIMITED", ", streaming: true"), rawBufferSocket, ""))))
		client := &http.Client{Timeout: 5 * time.Second}
		Expect(httpDo(client, http.MethodGet, listenerURL(port, "/upward"), nil, nil).Body).To(Equal("upstream saw /upward"))

		// The pooled connection stays open: its segments so far are the
		// connection, the request written and the response read.
		var segs []*datatapv3.SocketStreamedTraceSegment
		socketFile(prefix+"_*.pb_length_delimited", func(b []byte) bool {
			segs = nil
			for len(b) > 0 {
				size, n := protowire.ConsumeVarint(b)
				if n <= 0 || uint64(len(b)-n) < size {
					return false
				}
				var w datatapv3.TraceWrapper
				if proto.Unmarshal(b[n:n+int(size)], &w) != nil {
					return false
				}
				segs = append(segs, w.GetSocketStreamedTraceSegment())
				b = b[n+int(size):]
			}
			var events []*datatapv3.SocketEvent
			for _, s := range segs {
				if s.GetEvent() != nil {
					events = append(events, s.GetEvent())
				}
			}
			return strings.HasSuffix(joined(events, "read"), "upstream saw /upward")
		})
		Expect(segs[0].GetConnection().GetRemoteAddress().GetSocketAddress().GetPortValue()).To(BeEquivalentTo(portNum(up)))
		var events []*datatapv3.SocketEvent
		next := uint64(1)
		for _, s := range segs[1:] {
			Expect(s.GetTraceId()).To(Equal(segs[0].GetTraceId()))
			ev := s.GetEvent()
			kind, d := eventData(ev)
			if kind == "closed" {
				// The upstream may have closed the idle connection.
				next++
			}
			Expect(ev.GetSeqNum()).To(Equal(next))
			next += uint64(len(d))
			events = append(events, ev)
		}
		Expect(joined(events, "write")).To(HavePrefix("GET /upward HTTP/1.1\r\n"))
		Eventually(func() int {
			n, _ := strconv.Atoi(statValue(sc, "cluster.up.transport.tap.streamed_submit"))
			return n
		}, 5*time.Second).Should(BeNumerically(">=", len(segs)))
	})

	It("sees every byte of a tcp_proxy chain (no splice past the tap), streamed in JSON_BODY_AS_BYTES", func() {
		prefix := filepath.Join(dir, "tcp")
		echoPort := startTCPServer(echo)
		chain := withTransportSocket(`{filters: [{name: envoy.filters.network.tcp_proxy, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy, stat_prefix: tapped_tcp, cluster: echo}}]}`,
			tapSocket(staticTap(prefix, "JSON_BODY_AS_BYTES", ", streaming: true"), rawBufferSocket, ""))
		Start(dir, tlsBootstrap(port, "", []string{chain}, tlsCluster("echo", echoPort, rawBufferSocket, "")))

		c := dialTCP(port)
		payload := strings.Repeat("0123456789", 20)
		_, err := c.Write([]byte(payload))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.CloseWrite()).To(Succeed())
		back, err := io.ReadAll(c)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(back)).To(Equal(payload))
		Expect(c.Close()).To(Succeed())

		// Each segment is a pretty JSON object of its own in the file.
		socketFile(prefix+"_*.json", func(b []byte) bool {
			var events []*datatapv3.SocketEvent
			closed := false
			for dec := json.NewDecoder(bytes.NewReader(b)); dec.More(); {
				var raw json.RawMessage
				if dec.Decode(&raw) != nil {
					return false
				}
				var w datatapv3.TraceWrapper
				if protojson.Unmarshal(raw, &w) != nil {
					return false
				}
				if ev := w.GetSocketStreamedTraceSegment().GetEvent(); ev != nil {
					events = append(events, ev)
					closed = closed || ev.GetClosed() != nil
				}
			}
			return closed && joined(events, "read") == payload && joined(events, "write") == payload
		})
	})

	It("streams socket traces to /tap for its config id, and refuses HTTP matchers in a static tap by path", func() {
		chain := withTransportSocket(routeToCluster("admin_tapped", "up"), tapSocket(`{admin_config: {config_id: sock}}`, rawBufferSocket,
			`, socket_tap_config: {set_connection_per_event: true}`))
		sc := Start(dir, tlsBootstrap(port, "", []string{chain}, upCluster(rawBufferSocket)))
		Expect(sc.Get("/help").Body).To(ContainSubstring("/tap"))

		ts := attachSocketTap(sc, `{config_id: sock, tap_config: {match: {any_match: true},
		  output_config: {sinks: [{streaming_admin: {}, format: JSON_BODY_AS_STRING}], streaming: true}}}`)
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		Expect(err).NotTo(HaveOccurred())
		Expect(rawGet(c, "/live")).To(HaveSuffix("upstream saw /live"))

		next := func() *datatapv3.SocketStreamedTraceSegment {
			GinkgoHelper()
			var w *datatapv3.TraceWrapper
			Eventually(ts.traces, 10*time.Second).Should(Receive(&w))
			Expect(w.GetSocketStreamedTraceSegment()).NotTo(BeNil(), w.String())
			return w.GetSocketStreamedTraceSegment()
		}
		first := next()
		Expect(first.GetConnection().GetRemoteAddress().GetSocketAddress().GetPortValue()).To(BeEquivalentTo(c.LocalAddr().(*net.TCPAddr).Port))
		var reads, writes bytes.Buffer
		for {
			s := next()
			Expect(s.GetTraceId()).To(Equal(first.GetTraceId()))
			ev := s.GetEvent()
			Expect(ev.GetConnection().GetLocalAddress().GetSocketAddress().GetPortValue()).To(BeEquivalentTo(port), "set_connection_per_event")
			kind, d := eventData(ev)
			if kind == "closed" {
				break
			}
			map[string]*bytes.Buffer{"read": &reads, "write": &writes}[kind].WriteString(d)
		}
		Expect(reads.String()).To(HavePrefix("GET /live HTTP/1.1\r\n"))
		Expect(writes.String()).To(HaveSuffix("upstream saw /live"))
		ts.cancel()

		res, _ := validate("tap.yaml", tlsBootstrap(freePort(), "", []string{withTransportSocket(routeToCluster("bad", "up"), tapSocket(
			`{static_config: {match: {http_request_headers_match: {headers: [{name: x}]}}, output_config: {sinks: [{file_per_tap: {path_prefix: /tmp/x}}]}}}`,
			rawBufferSocket, ""))}, upCluster(rawBufferSocket)))
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("filter_chains[0].transport_socket.typed_config.common_config.static_config.match.http_request_headers_match"))
	})
})

var _ = Describe("The /tap endpoint with a tap transport socket", func() {
	It("comes with a listener whose chain has an admin tap socket, delivered by LDS, and goes with it", func() {
		dir := ldsSetup(ldsResponse("v1"))
		sc := Start(newDir(), ldsBootstrap(dir, ldsPath), "--drain-time-s", "0")
		Expect(sc.Do(http.MethodPost, "/tap", strings.NewReader(`{config_id: lds_sock}`), nil).Status).To(Equal(404))

		port := freePort()
		chain := withTransportSocket(directChain("socket tapped", ""), tapSocket(`{admin_config: {config_id: lds_sock}}`, rawBufferSocket, ""))
		replaceLDS(dir, ldsResponse("v2", listenerDef{Name: "sock", Port: port, Chains: []string{chain}}))
		Eventually(func() string { return sc.Get("/help").Body }, 10*time.Second).Should(ContainSubstring("/tap"))

		ts := attachSocketTap(sc, `{config_id: lds_sock, tap_config: {match: {any_match: true}, output_config: {sinks: [{streaming_admin: {}}]}}}`)
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		Expect(err).NotTo(HaveOccurred())
		Expect(rawGet(c, "/")).To(HaveSuffix("socket tapped"))
		var w *datatapv3.TraceWrapper
		Eventually(ts.traces, 10*time.Second).Should(Receive(&w))
		Expect(joined(w.GetSocketBufferedTrace().GetEvents(), "write")).To(HaveSuffix("socket tapped"))
		ts.cancel()

		replaceLDS(dir, ldsResponse("v3"))
		Eventually(func() int {
			return sc.Do(http.MethodPost, "/tap", strings.NewReader(`{config_id: lds_sock}`), nil).Status
		}, 10*time.Second, 100*time.Millisecond).Should(Equal(404))
	})
})

var _ = Describe("min_streamed_sent_bytes on the tap transport socket", func() {
	It("gathers streamed events in segments of events, and a /tap stream ends when LDS removes the last tap extension", func() {
		dir := ldsSetup(ldsResponse("v1"))
		sc := Start(newDir(), ldsBootstrap(dir, ldsPath), "--drain-time-s", "0")
		port := freePort()
		chain := withTransportSocket(directChain("batched tap", ""), tapSocket(`{admin_config: {config_id: batched}}`, rawBufferSocket, ""))
		replaceLDS(dir, ldsResponse("v2", listenerDef{Name: "batched", Port: port, Chains: []string{chain}}))
		Eventually(func() string { return sc.Get("/help").Body }, 10*time.Second).Should(ContainSubstring("/tap"))

		ts := attachSocketTap(sc, `{config_id: batched, tap_config: {match: {any_match: true},
		  output_config: {sinks: [{streaming_admin: {}, format: JSON_BODY_AS_STRING}], streaming: true, min_streamed_sent_bytes: 16, max_buffered_rx_bytes: 4}}}`)
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		Expect(err).NotTo(HaveOccurred())
		Expect(rawGet(c, "/batched")).To(HaveSuffix("batched tap"))

		var w *datatapv3.TraceWrapper
		Eventually(ts.traces, 10*time.Second).Should(Receive(&w))
		first := w.GetSocketStreamedTraceSegment()
		Expect(first.GetConnection()).NotTo(BeNil(), w.String())
		var events []*datatapv3.SocketEvent
		next := uint64(1)
		for closed := false; !closed; {
			Eventually(ts.traces, 10*time.Second).Should(Receive(&w))
			seg := w.GetSocketStreamedTraceSegment()
			Expect(seg.GetTraceId()).To(Equal(first.GetTraceId()))
			Expect(seg.GetEvent()).To(BeNil(), "a single event segment under min_streamed_sent_bytes")
			batch := seg.GetEvents().GetEvents()
			Expect(batch).NotTo(BeEmpty(), w.String())
			size := 0
			for _, ev := range batch {
				kind, d := eventData(ev)
				if kind == "closed" {
					next++
					closed = true
				}
				Expect(ev.GetSeqNum()).To(Equal(next))
				next += uint64(len(d))
				size += len(d)
			}
			// Only the close sends a batch of fewer bytes.
			if !closed {
				Expect(size).To(BeNumerically(">=", 16))
			}
			events = append(events, batch...)
		}
		// Whole events: max_buffered_rx_bytes (4) cuts nothing.
		Expect(joined(events, "read")).To(HavePrefix("GET /batched HTTP/1.1\r\n"))
		Expect(joined(events, "write")).To(HaveSuffix("batched tap"))

		// The stream stays open until the listener, the last extension
		// with a config id, is gone; then its response completes.
		Consistently(ts.traces, 300*time.Millisecond).ShouldNot(BeClosed())
		replaceLDS(dir, ldsResponse("v3"))
		Eventually(ts.traces, 10*time.Second).Should(BeClosed())

		res, _ := validate("tap.yaml", tlsBootstrap(freePort(), "", []string{withTransportSocket(routeToCluster("bad", "up"), tapSocket(
			staticTap("/tmp/x", "JSON_BODY_AS_BYTES", ", min_streamed_sent_bytes: 8"), rawBufferSocket, ""))},
			tlsCluster("up", freePort(), rawBufferSocket, "")))
		Expect(res.ExitCode).To(Equal(1))
		Expect(res.Stderr).To(ContainSubstring("transport_socket.typed_config.common_config.static_config.output_config.min_streamed_sent_bytes: only with output_config.streaming"))
	})
})
