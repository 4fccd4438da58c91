package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestFrameScanner feeds a stream of frames to the scanner in pieces of
// every size and checks that it finds each frame, its type, flags and
// payload less padding, after the client preface.
func TestFrameScanner(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(clientPreface)
	fr := http2.NewFramer(&b, nil)
	_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte("abc"), EndHeaders: true})
	_ = fr.WriteDataPadded(1, false, []byte("hello"), make([]byte, 7))
	_ = fr.WriteDataPadded(1, false, nil, make([]byte, 3))
	_ = fr.WriteData(1, true, make([]byte, 20000))
	_ = fr.WritePriority(3, http2.PriorityParam{Weight: 1})
	_ = fr.WriteWindowUpdate(0, 10)
	_ = fr.WriteRSTStream(5, http2.ErrCodeCancel)
	_ = fr.WriteGoAway(7, http2.ErrCodeEnhanceYourCalm, []byte("debug"))
	want := []frameHead{
		{typ: 0x4, length: 6, payload: 6},
		{typ: frameTypeHeaders, flags: flagEndHeaders, length: 3, payload: 3, stream: 1},
		{typ: frameTypeData, flags: flagPadded, length: 13, payload: 5, stream: 1},
		{typ: frameTypeData, flags: flagPadded, length: 4, payload: 0, stream: 1},
		{typ: frameTypeData, flags: flagEndStream, length: 20000, payload: 20000, stream: 1},
		{typ: frameTypePriority, length: 5, payload: 5, stream: 3},
		{typ: frameTypeWindowUpdate, length: 4, payload: 4},
		{typ: frameTypeRSTStream, length: 4, payload: 4, stream: 5, code: uint32(http2.ErrCodeCancel)},
		{typ: frameTypeGoAway, length: 13, payload: 13, code: uint32(http2.ErrCodeEnhanceYourCalm)},
	}
	stream := b.Bytes()
	for _, piece := range []int{1, 2, 5, 9, 10, 100, 16384, len(stream)} {
		t.Run(fmt.Sprintf("pieces of %d", piece), func(t *testing.T) {
			s := frameScanner{skip: len(clientPreface)}
			var got []frameHead
			for p := stream; len(p) > 0; {
				n := min(piece, len(p))
				if err := s.scan(p[:n], func(h frameHead) error { got = append(got, h); return nil }); err != nil {
					t.Fatal(err)
				}
				p = p[n:]
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("frames\n got %v\nwant %v", got, want)
			}
			if !s.atBoundary() {
				t.Error("the scanner is not between frames at the end of the stream")
			}
		})
	}
	t.Run("random pieces", func(t *testing.T) {
		s := frameScanner{skip: len(clientPreface)}
		n := 0
		for p := stream; len(p) > 0; {
			k := min(1+rand.IntN(40), len(p))
			_ = s.scan(p[:k], func(frameHead) error { n++; return nil })
			p = p[k:]
		}
		if n != len(want) {
			t.Errorf("%d frames, want %d", n, len(want))
		}
	})
}

// floodingUpstream is a raw h2c server that answers the first request,
// then sends flood, and reports what the client sent after it.
func floodingUpstream(t *testing.T, flood func(fr *http2.Framer)) (port int, got <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	out := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(c)
		if _, err := io.ReadFull(br, make([]byte, len(clientPreface))); err != nil {
			return
		}
		fr := http2.NewFramer(c, br)
		fr.AllowIllegalWrites = true
		_ = fr.WriteSettings()
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			if h, ok := f.(*http2.HeadersFrame); ok {
				var blk bytes.Buffer
				_ = hpack.NewEncoder(&blk).WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: h.StreamID, BlockFragment: blk.Bytes(), EndHeaders: true})
				flood(fr)
				rest, _ := io.ReadAll(br)
				out <- rest
				return
			}
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, out
}

// TestHTTP2UpstreamFloods has an upstream flood the proxy's HTTP/2
// connection with frames that carry nothing: past each limit the proxy
// closes the connection, with a GOAWAY ENHANCE_YOUR_CALM, and counts the
// flood in cluster.<name>.http2.
func TestHTTP2UpstreamFloods(t *testing.T) {
	tests := map[string]struct {
		options string
		stat    string
		flood   func(fr *http2.Framer)
	}{
		"PRIORITY frames": {
			stat: "inbound_priority_frames_flood",
			flood: func(fr *http2.Framer) {
				for range 250 {
					_ = fr.WritePriority(1, http2.PriorityParam{Weight: 1})
				}
			},
		},
		"empty DATA frames": {
			stat: "inbound_empty_frames_flood",
			flood: func(fr *http2.Framer) {
				for range 3 {
					_ = fr.WriteData(1, false, nil)
				}
			},
		},
		"WINDOW_UPDATE frames": {
			stat: "inbound_window_update_frames_flood",
			flood: func(fr *http2.Framer) {
				for range 50 {
					_ = fr.WriteWindowUpdate(0, 1)
				}
			},
		},
		"a configured limit": {
			options: "max_inbound_priority_frames_per_stream: 2",
			stat:    "inbound_priority_frames_flood",
			flood: func(fr *http2.Framer) {
				for range 5 {
					_ = fr.WritePriority(1, http2.PriorityParam{Weight: 1})
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			port, got := floodingUpstream(t, tc.flood)
			m, store, _ := newTestManager(t, fmt.Sprintf(`
- name: h2
  http2_protocol_options: {%s}
  load_assignment:
    cluster_name: h2
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
`, tc.options, port))
			c := m.Cluster("h2")
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://ignored/", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.RoundTripHTTP2(req, c.PickHost(nil))
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				_ = resp.Body.Close()
			}
			if err == nil {
				t.Fatal("the response of a flooding upstream was read to its end")
			}
			var rest []byte
			select {
			case rest = <-got:
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream did not see the connection end")
			}
			if !bytes.Contains(rest, goAwayEnhanceYourCalm) {
				t.Errorf("no GOAWAY ENHANCE_YOUR_CALM before the connection ended; the client sent %x", rest)
			}
			if v := store.Counter("cluster.h2.http2." + tc.stat).Value(); v != 1 {
				t.Errorf("cluster.h2.http2.%s = %d, want 1", tc.stat, v)
			}
		})
	}
}

// TestHTTP2UpstreamWithinLimits checks that an upstream that sends a
// PRIORITY frame, a WINDOW_UPDATE and an empty DATA frame, all within the
// limits, is served.
func TestHTTP2UpstreamWithinLimits(t *testing.T) {
	port, _ := newH2CServer(t)
	m, store, _ := newTestManager(t, fmt.Sprintf(`
- name: h2
  http2_protocol_options: {}
  load_assignment:
    cluster_name: h2
    endpoints:
    - lb_endpoints:
      - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
`, port))
	c := m.Cluster("h2")
	for range 20 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://ignored/", bytes.NewReader(make([]byte, 100_000)))
		resp, err := c.RoundTripHTTP2(req, c.PickHost(nil))
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, stat := range []string{"inbound_priority_frames_flood", "inbound_empty_frames_flood", "inbound_window_update_frames_flood"} {
		if v := store.Counter("cluster.h2.http2." + stat).Value(); v != 0 {
			t.Errorf("cluster.h2.http2.%s = %d for a well-behaved upstream", stat, v)
		}
	}
}
