package httpconn

// Http2ProtocolOptions read by the HTTP/2 server: hpack_table_size,
// enable_huffman_encoding, max_header_field_size_kb and
// custom_settings_parameters, through a raw client.

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// withH2Options edits http2_protocol_options.
func withH2Options(edit func(*corev3.Http2ProtocolOptions)) func(*hcmv3.HttpConnectionManager) {
	return func(cfg *hcmv3.HttpConnectionManager) {
		if cfg.Http2ProtocolOptions == nil {
			cfg.Http2ProtocolOptions = &corev3.Http2ProtocolOptions{}
		}
		edit(cfg.Http2ProtocolOptions)
	}
}

// customSetting is one custom_settings_parameters entry.
func customSetting(id, v uint32) *corev3.Http2ProtocolOptions_SettingsParameter {
	return &corev3.Http2ProtocolOptions_SettingsParameter{Identifier: wrapperspb.UInt32(id), Value: wrapperspb.UInt32(v)}
}

// serverSettingsInOrder opens a connection and returns the settings of the
// server's first SETTINGS frame, in the order sent.
func serverSettingsInOrder(t *testing.T, addr string) []http2.Setting {
	t.Helper()
	c := newH2Client(t, dialH2Raw(t, addr))
	c.send("preface", func() error { _, err := io.WriteString(c.nc, http2.ClientPreface); return err })
	c.send("SETTINGS", func() error { return c.fr.WriteSettings() })
	f, err := c.next()
	if err != nil {
		t.Fatal(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		t.Fatalf("first frame %v, want SETTINGS", f.Header())
	}
	var got []http2.Setting
	_ = sf.ForeachSetting(func(s http2.Setting) error { got = append(got, s); return nil })
	return got
}

// TestH2SettingsSent checks the SETTINGS frame: custom parameters first
// (an equal duplicate once), then the named settings, with
// SETTINGS_HEADER_TABLE_SIZE when hpack_table_size is set (or a custom
// parameter named it, which the named default then overrides, as in
// Envoy).
func TestH2SettingsSent(t *testing.T) {
	tests := map[string]struct {
		edit func(*corev3.Http2ProtocolOptions)
		want string
	}{
		"defaults": {
			edit: func(*corev3.Http2ProtocolOptions) {},
			want: "[MAX_CONCURRENT_STREAMS=1024 INITIAL_WINDOW_SIZE=262144 MAX_HEADER_LIST_SIZE=61440]",
		},
		"hpack_table_size": {
			edit: func(o *corev3.Http2ProtocolOptions) { o.HpackTableSize = wrapperspb.UInt32(0) },
			want: "[HEADER_TABLE_SIZE=0 MAX_CONCURRENT_STREAMS=1024 INITIAL_WINDOW_SIZE=262144 MAX_HEADER_LIST_SIZE=61440]",
		},
		"custom parameters": {
			edit: func(o *corev3.Http2ProtocolOptions) {
				o.CustomSettingsParameters = append(o.CustomSettingsParameters,
					customSetting(0x9, 1), customSetting(0x7777, 42), customSetting(0x9, 1), customSetting(0x2, 0))
			},
			want: "[NO_RFC7540_PRIORITIES=1 UNKNOWN_SETTING_30583=42 ENABLE_PUSH=0 MAX_CONCURRENT_STREAMS=1024 INITIAL_WINDOW_SIZE=262144 MAX_HEADER_LIST_SIZE=61440]",
		},
		"custom named identifiers, named fields unset": {
			edit: func(o *corev3.Http2ProtocolOptions) {
				o.CustomSettingsParameters = append(o.CustomSettingsParameters, customSetting(0x1, 8192), customSetting(0x3, 7))
			},
			want: "[HEADER_TABLE_SIZE=8192 MAX_CONCURRENT_STREAMS=7 HEADER_TABLE_SIZE=4096 MAX_CONCURRENT_STREAMS=1024 INITIAL_WINDOW_SIZE=262144 MAX_HEADER_LIST_SIZE=61440]",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := startH2Proxy(t, hcmv3.HttpConnectionManager_HTTP2, nil, withH2Options(tc.edit))
			got := serverSettingsInOrder(t, f.addr)
			var names []string
			for _, s := range got {
				names = append(names, s.ID.String()+"="+strconv.FormatUint(uint64(s.Val), 10))
			}
			if s := "[" + strings.Join(names, " ") + "]"; s != tc.want {
				t.Fatalf("SETTINGS %s, want %s", s, tc.want)
			}
		})
	}
}

// TestH2CustomSettingsRefused checks Envoy's rules on the custom
// parameters, and the wire field limit against the headers limit.
func TestH2CustomSettingsRefused(t *testing.T) {
	tests := map[string]struct {
		edit func(*corev3.Http2ProtocolOptions)
		want string
	}{
		"push enabled": {
			edit: func(o *corev3.Http2ProtocolOptions) {
				o.CustomSettingsParameters = append(o.CustomSettingsParameters, customSetting(0x2, 1))
			},
			want: "http2_protocol_options.custom_settings_parameters: server push is not supported",
		},
		"extended CONNECT": {
			edit: func(o *corev3.Http2ProtocolOptions) {
				o.CustomSettingsParameters = append(o.CustomSettingsParameters, customSetting(0x8, 1))
			},
			want: `the "allow_connect" SETTINGS parameter must only be configured through the named field`,
		},
		"inconsistent duplicates": {
			edit: func(o *corev3.Http2ProtocolOptions) {
				o.CustomSettingsParameters = append(o.CustomSettingsParameters, customSetting(0x10, 1), customSetting(0x10, 2), customSetting(0x11, 1), customSetting(0x11, 3))
			},
			want: "inconsistent HTTP/2 custom SETTINGS parameter(s) detected; identifiers = {0x10,0x11}",
		},
		"named collisions": {
			edit: func(o *corev3.Http2ProtocolOptions) {
				o.HpackTableSize = wrapperspb.UInt32(100)
				o.InitialStreamWindowSize = wrapperspb.UInt32(1 << 20)
				o.CustomSettingsParameters = append(o.CustomSettingsParameters, customSetting(0x1, 1), customSetting(0x4, 1<<20))
			},
			want: "the {hpack_table_size,initial_stream_window_size} HTTP/2 SETTINGS parameter(s) can not be configured through both named and custom parameters",
		},
		"max frame size": {
			edit: func(o *corev3.Http2ProtocolOptions) {
				o.CustomSettingsParameters = append(o.CustomSettingsParameters, customSetting(0x5, 1<<20))
			},
			want: "SETTINGS_MAX_FRAME_SIZE (0x5) other than 16384 is not supported by Outrigger",
		},
		"field limit above the headers limit": {
			edit: func(o *corev3.Http2ProtocolOptions) { o.MaxHeaderFieldSizeKb = wrapperspb.UInt32(64) },
			want: "http2_protocol_options.max_header_field_size_kb: 64 exceeds max_request_headers_kb (60)",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := hcm(routeConfig(directRoute("/", 200, "x")))
			withH2Options(tc.edit)(cfg)
			_, err := readSettings(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// responseBlock sends a GET and returns the raw header block of its
// response.
func responseBlock(c *h2Client, path string) []byte {
	c.t.Helper()
	id := c.get(path)
	for {
		f, err := c.next()
		if err != nil {
			c.t.Fatalf("reading the response: %v\nframes received: %s", err, c.traceString())
		}
		if hf, ok := f.(*http2.HeadersFrame); ok && hf.StreamID == id {
			return bytes.Clone(hf.HeaderBlockFragment())
		}
	}
}

// TestH2HuffmanEncoding checks enable_huffman_encoding: by default a
// response string is Huffman-coded when shorter (the server name does not
// appear as it is); false sends every string as it is. Both decode to the
// same fields.
func TestH2HuffmanEncoding(t *testing.T) {
	for name, tc := range map[string]struct {
		huffman *wrapperspb.BoolValue
		raw     bool
	}{
		"unset": {nil, false},
		"true":  {wrapperspb.Bool(true), false},
		"false": {wrapperspb.Bool(false), true},
	} {
		t.Run(name, func(t *testing.T) {
			f := startH2Proxy(t, hcmv3.HttpConnectionManager_HTTP2, nil, withH2Options(func(o *corev3.Http2ProtocolOptions) { o.EnableHuffmanEncoding = tc.huffman }))
			c := dialH2(t, f.addr)
			for range 2 { // the second response goes through the memo
				block := responseBlock(c, "/direct")
				if got := bytes.Contains(block, []byte(ServerName)); got != tc.raw {
					t.Fatalf("server name as it is in the block: %v, want %v (block %x)", got, tc.raw, block)
				}
				fields, err := hpack.NewDecoder(4096, nil).DecodeFull(block)
				if err != nil {
					t.Fatal(err)
				}
				if got := headLines(fields); !strings.Contains(got, "server: "+ServerName) {
					t.Fatalf("head %s has no server field", got)
				}
			}
		})
	}
}

// TestH2MaxHeaderFieldSize checks max_header_field_size_kb: it bounds a
// field as coded on the wire, so a value longer than the limit that
// Huffman-codes below it passes, and a longer coding ends the connection
// with COMPRESSION_ERROR, as nghttp2's decoder does.
func TestH2MaxHeaderFieldSize(t *testing.T) {
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_HTTP2, nil, func(cfg *hcmv3.HttpConnectionManager) {
		cfg.MaxRequestHeadersKb = wrapperspb.UInt32(96)
	}, withH2Options(func(o *corev3.Http2ProtocolOptions) {
		o.MaxHeaderFieldSizeKb = wrapperspb.UInt32(64)
	}))
	c := dialH2(t, f.addr)
	// 90000 'a's are 5 bits each coded: 56250 bytes.
	c.sendBlock(1, requestHead("GET", "/direct", "x-big", strings.Repeat("a", 90000))...)
	c.wantOK(1, "hello direct")
	// '~' is 13 bits coded: longer than itself, so 70000 bytes raw.
	c.sendBlock(3, requestHead("GET", "/direct", "x-big", strings.Repeat("~", 70000))...)
	c.wantGoAway(http2.ErrCodeCompression)
}

// sendBlock sends a request head ending stream id as a HEADERS frame and
// as many CONTINUATION frames as its size needs.
func (c *h2Client) sendBlock(id uint32, fields ...string) {
	c.t.Helper()
	block := hpackBlock(fields...)
	c.streamSend[id] = c.initialSend
	c.send("HEADERS", func() error {
		first := block[:min(len(block), 16384)]
		rest := block[len(first):]
		if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndStream: true, EndHeaders: len(rest) == 0}); err != nil {
			return err
		}
		for len(rest) > 0 {
			n := min(len(rest), 16384)
			if err := c.fr.WriteContinuation(id, n == len(rest), rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	})
}

// TestH2HPACKTableSize checks hpack_table_size: once the client
// acknowledged the SETTINGS_HEADER_TABLE_SIZE announced, a dynamic table
// size update within it is taken and one beyond it is a COMPRESSION_ERROR.
func TestH2HPACKTableSize(t *testing.T) {
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_HTTP2, nil, withH2Options(func(o *corev3.Http2ProtocolOptions) {
		o.HpackTableSize = wrapperspb.UInt32(256)
	}))
	head := hpackBlock(requestHead("GET", "/direct")...)
	c := dialH2(t, f.addr)
	if got := c.serverSettings[http2.SettingHeaderTableSize]; got != 256 {
		t.Fatalf("SETTINGS_HEADER_TABLE_SIZE %d, want 256", got)
	}
	c.send("HEADERS", func() error {
		return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: append(appendHPACKInt(nil, 0x20, 5, 256), head...), EndStream: true, EndHeaders: true})
	})
	c.wantOK(1, "hello direct")
	c.send("HEADERS", func() error {
		return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: append(appendHPACKInt(nil, 0x20, 5, 257), head...), EndStream: true, EndHeaders: true})
	})
	c.wantGoAway(http2.ErrCodeCompression)
}

// TestH2StreamResetRate checks stream_reset_burst and stream_reset_rate:
// the client's RST_STREAM frames take tokens from a bucket of burst, and
// the one that finds it empty gets GOAWAY INTERNAL_ERROR (counted in
// http2.goaway_sent); with the defaults (1000 tokens) the same resets
// leave the connection serving.
func TestH2StreamResetRate(t *testing.T) {
	resets := func(c *h2Client, n int) {
		for range n {
			id := c.get("/direct")
			c.wantOK(id, "hello direct")
			c.send("RST_STREAM", func() error { return c.fr.WriteRSTStream(id, http2.ErrCodeCancel) })
		}
	}
	t.Run("burst of 3", func(t *testing.T) {
		f := startH2Proxy(t, hcmv3.HttpConnectionManager_HTTP2, nil, withH2Options(func(o *corev3.Http2ProtocolOptions) {
			o.StreamResetBurst = wrapperspb.UInt64(3)
			o.StreamResetRate = wrapperspb.UInt64(0)
		}))
		c := dialH2(t, f.addr)
		resets(c, 4)
		g := c.wantGoAway(http2.ErrCodeInternal)
		if g.lastStreamID != 7 {
			t.Errorf("GOAWAY names stream %d, want 7 (the last opened)", g.lastStreamID)
		}
		f.waitCounter(t, "http2.goaway_sent", 1)
	})
	t.Run("defaults", func(t *testing.T) {
		f := startH2Proxy(t, hcmv3.HttpConnectionManager_HTTP2, nil)
		c := dialH2(t, f.addr)
		resets(c, 4)
		c.wantOK(c.get("/direct"), "hello direct")
		if len(c.goAways) > 0 {
			t.Fatalf("GOAWAY %v after 4 resets with the defaults", c.goAways)
		}
	})
}

// TestResetBucket checks the bucket's refill, in whole seconds and capped
// at the burst, as nghttp2's.
func TestResetBucket(t *testing.T) {
	base := time.Unix(1000, 0)
	b := resetBucket{tokens: 2, base: base}
	steps := []struct {
		at   time.Duration
		want bool
	}{
		{0, true}, {0, true}, {900 * time.Millisecond, false}, // two tokens, none refilled within the second
		{time.Second, true}, {time.Second, false}, // one a second
		{10 * time.Second, true}, {10 * time.Second, true}, {10 * time.Second, false}, // capped at the burst
	}
	for i, s := range steps {
		if got := b.take(2, 1, base.Add(s.at)); got != s.want {
			t.Fatalf("step %d at %v: take %v, want %v", i, s.at, got, s.want)
		}
	}
	huge := resetBucket{tokens: 0, base: base}
	if !huge.take(5, 1<<63, base.Add(3*time.Second)) || huge.tokens != 4 {
		t.Fatalf("an overflowing gain left %d tokens, want the burst less one", huge.tokens)
	}
}

// TestH2DisallowObsText checks disallow_obs_text: by default a request
// field value with obs-text (0x80 to 0xFF) is taken; with it the request
// is malformed, which ends the connection (GOAWAY PROTOCOL_ERROR) as any
// malformed request does by default.
func TestH2DisallowObsText(t *testing.T) {
	value := "caf\xe9"
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_HTTP2, nil)
	c := dialH2(t, f.addr)
	c.wantOK(c.open(true, requestHead("GET", "/direct", "x-text", value)...), "hello direct")

	f = startH2Proxy(t, hcmv3.HttpConnectionManager_HTTP2, nil, withH2Options(func(o *corev3.Http2ProtocolOptions) {
		o.DisallowObsText = wrapperspb.Bool(true)
	}))
	c = dialH2(t, f.addr)
	c.wantOK(c.open(true, requestHead("GET", "/direct", "x-text", "cafe")...), "hello direct")
	c.open(true, requestHead("GET", "/direct", "x-text", value)...)
	c.wantGoAway(http2.ErrCodeProtocol)
}
