package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// scriptedH2Server serves cleartext HTTP/2 on 127.0.0.1, acting on each
// request by its path: /ok answers 200, /reset resets the stream
// (INTERNAL_ERROR), /hang never answers (and says so on the channel
// returned), /goaway sends a GOAWAY that keeps the stream and then closes
// the connection.
func scriptedH2Server(t *testing.T) (int, <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	hung := make(chan struct{}, 16)
	t.Cleanup(func() {
		_ = ln.Close()
		close(done)
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				go func() {
					<-done
					_ = c.Close()
				}()
				serveScriptedH2(c, hung)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, hung
}

func serveScriptedH2(c net.Conn, hung chan<- struct{}) {
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil {
		return
	}
	fr := http2.NewFramer(c, c)
	if fr.WriteSettings() != nil {
		return
	}
	dec := hpack.NewDecoder(4096, nil)
	for {
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
			id := f.StreamID
			switch path {
			case "/ok":
				var b bytes.Buffer
				_ = hpack.NewEncoder(&b).WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b.Bytes(), EndHeaders: true, EndStream: true})
			case "/hang":
				hung <- struct{}{}
			case "/reset":
				_ = fr.WriteRSTStream(id, http2.ErrCodeInternal)
			case "/goaway":
				_ = fr.WriteGoAway(id, http2.ErrCodeNo, nil)
				return
			}
		}
	}
}

// TestHTTP2StreamStats: over a real HTTP/2 connection, a stream the host
// resets counts in upstream_rq_rx_reset, a request the proxy cancels in
// upstream_rq_tx_reset, a GOAWAY in upstream_cx_close_notify, and the
// host's close with a stream still open in
// upstream_cx_destroy_remote_with_active_rq; the connection's four
// streams are recorded in upstream_rq_per_cx. An answered request counts
// in none.
func TestHTTP2StreamStats(t *testing.T) {
	port, hung := scriptedH2Server(t)
	m, store, _ := newTestManager(t, h2ClusterYAML(port))
	c := m.Cluster("up")
	h := c.PickHost(nil)
	counters := func() map[string]uint64 {
		out := map[string]uint64{}
		for _, n := range []string{"upstream_rq_rx_reset", "upstream_rq_tx_reset", "upstream_cx_close_notify",
			"upstream_cx_destroy_with_active_rq", "upstream_cx_destroy_local_with_active_rq",
			"upstream_cx_destroy_remote_with_active_rq", "upstream_cx_total"} {
			out[n] = store.Counter("cluster.up." + n).Value()
		}
		return out
	}
	send := func(path string, ctx context.Context) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", "http://up"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.RoundTripHTTP2(req, h)
	}
	expect := func(step string, want map[string]uint64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := counters()
			same := true
			for k, v := range want {
				if got[k] != v {
					same = false
				}
			}
			if same {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %s: %v, want %v", step, got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	want := map[string]uint64{"upstream_rq_rx_reset": 0, "upstream_rq_tx_reset": 0, "upstream_cx_close_notify": 0,
		"upstream_cx_destroy_with_active_rq": 0, "upstream_cx_destroy_local_with_active_rq": 0,
		"upstream_cx_destroy_remote_with_active_rq": 0, "upstream_cx_total": 1}

	resp, err := send("/ok", t.Context())
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/ok: %v %v", resp, err)
	}
	_ = resp.Body.Close()
	expect("an answered request", want)

	if _, err := send("/reset", t.Context()); err == nil {
		t.Fatal("/reset: no error")
	}
	want["upstream_rq_rx_reset"] = 1
	expect("a reset by the host", want)

	// Cancelled once the host has its HEADERS: the stream is open.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		select {
		case <-hung:
			cancel()
		case <-ctx.Done():
		}
	}()
	if _, err := send("/hang", ctx); err == nil {
		t.Fatal("/hang: no error")
	}
	want["upstream_rq_tx_reset"] = 1
	expect("a cancelled request", want)

	if _, err := send("/goaway", t.Context()); err == nil {
		t.Fatal("/goaway: no error")
	}
	want["upstream_cx_close_notify"] = 1
	want["upstream_cx_destroy_with_active_rq"] = 1
	want["upstream_cx_destroy_remote_with_active_rq"] = 1
	expect("a GOAWAY and a close", want)

	hist := store.HistogramWithUnit("cluster.up.upstream_rq_per_cx", stats.UnitUnspecified)
	store.MergeHistograms()
	st := hist.CumulativeStatistics()
	if st.SampleCount != 1 || len(st.Bins) != 1 || st.Bins[0].LowerBound > 4 || st.Bins[0].LowerBound+st.Bins[0].Width <= 4 {
		t.Fatalf("upstream_rq_per_cx: %d samples in bins %+v, want one sample of 4", st.SampleCount, st.Bins)
	}
}

// h2ClusterYAML is cluster "up": one HTTP/2 host, 127.0.0.1:port.
func h2ClusterYAML(port int) string {
	return fmt.Sprintf(`
- name: up
  connect_timeout: 2s
  typed_extension_protocol_options:
    envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
      "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
      explicit_http_config: {http2_protocol_options: {}}
  load_assignment:
    cluster_name: up
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
`, port)
}
