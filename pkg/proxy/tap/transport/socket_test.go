package transport

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/matcher/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tapv3 "github.com/envoyproxy/go-control-plane/envoy/config/tap/v3"
	datatapv3 "github.com/envoyproxy/go-control-plane/envoy/data/tap/v3"
	commontapv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/tap/v3"
	tapsockv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tap/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tap"
)

// recordSink keeps what a tracer submits.
type recordSink struct{ got []*datatapv3.TraceWrapper }

func (r *recordSink) Submit(w *datatapv3.TraceWrapper, _ uint64) { r.got = append(r.got, w) }

// fakeConn reads from in and keeps what is written.
type fakeConn struct {
	net.Conn
	in  *bytes.Reader
	out bytes.Buffer
}

func (f *fakeConn) Read(p []byte) (int, error)  { return f.in.Read(p) }
func (f *fakeConn) Write(p []byte) (int, error) { return f.out.Write(p) }
func (f *fakeConn) Close() error                { return nil }

var (
	local  = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1000}
	remote = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 50000}
)

// staticSocket is a Socket with a static configuration whose sink
// records.
func staticSocket(t *testing.T, streaming, perEvent bool, maxRx, maxTx int) (*Socket, *recordSink, *stats.Store) {
	t.Helper()
	m, err := tap.CompileMatch(&matcherv3.MatchPredicate{Rule: &matcherv3.MatchPredicate_AnyMatch{AnyMatch: true}}, "match")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordSink{}
	st := stats.NewStore()
	sc := st.Scope("listener.test.transport.tap.")
	s := &Socket{
		static:   &tap.Config{Match: m, MaxRx: maxRx, MaxTx: maxTx, Streaming: streaming, Sink: rec, Format: tapv3.OutputSink_JSON_BODY_AS_STRING},
		perEvent: perEvent,
		streamed: sc.Counter("streamed_submit"),
		buffered: sc.Counter("buffered_submit"),
	}
	return s, rec, st
}

// drive reads everything from a connection whose peer sent in, in
// pieces of size read, writes each of writes, and closes it.
func drive(t *testing.T, s *Socket, in string, read int, writes ...string) *tracer {
	t.Helper()
	c := s.Wrap(&fakeConn{in: bytes.NewReader([]byte(in))}, local, remote)
	tc, ok := c.(*conn)
	if !ok {
		t.Fatalf("Wrap returned %T, not a tapped connection", c)
	}
	tc.t.now = func() time.Time { return time.Unix(0, 0) }
	buf := make([]byte, read)
	for {
		if _, err := c.Read(buf); err != nil {
			break
		}
	}
	for _, w := range writes {
		if _, err := c.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// A second close records nothing more.
	_ = c.Close()
	return tc.t
}

func eventText(ev *datatapv3.SocketEvent) string {
	body := func(b *datatapv3.Body) string {
		s := b.GetAsString() + string(b.GetAsBytes())
		if b.GetTruncated() {
			s += "+"
		}
		return s
	}
	switch {
	case ev.GetRead() != nil:
		return "read:" + body(ev.GetRead().GetData())
	case ev.GetWrite() != nil:
		return "write:" + body(ev.GetWrite().GetData())
	case ev.GetClosed() != nil:
		return "closed"
	}
	return "?"
}

func TestBufferedTrace(t *testing.T) {
	s, rec, st := staticSocket(t, false, false, 4, 6)
	tr := drive(t, s, "hello", 3, "wor", "ld!", "more")
	if len(rec.got) != 1 {
		t.Fatalf("got %d submissions, want one buffered trace", len(rec.got))
	}
	bt := rec.got[0].GetSocketBufferedTrace()
	if bt == nil {
		t.Fatalf("not a buffered trace: %v", rec.got[0])
	}
	var got []string
	for _, ev := range bt.GetEvents() {
		got = append(got, eventText(ev))
		if ev.GetTimestamp() == nil || ev.GetSeqNum() != 0 {
			t.Errorf("buffered event %v: want a timestamp and no seq_num", ev)
		}
	}
	// Reads of 3 bytes: "hel", then "lo" cut to the 1 byte left; the
	// writes: "wor", "ld!" (6 bytes, the limit), then "more" cut to none.
	want := "read:hel read:l+ write:wor write:ld! write:+"
	if strings.Join(got, " ") != want {
		t.Errorf("events %q, want %q", strings.Join(got, " "), want)
	}
	if !bt.GetReadTruncated() || !bt.GetWriteTruncated() {
		t.Errorf("read_truncated %v, write_truncated %v: want both", bt.GetReadTruncated(), bt.GetWriteTruncated())
	}
	if bt.GetTraceId() != tr.id {
		t.Errorf("trace_id %d, want %d", bt.GetTraceId(), tr.id)
	}
	if got := bt.GetConnection(); !proto.Equal(got, connection(local, remote)) ||
		got.GetLocalAddress().GetSocketAddress().GetAddress() != "127.0.0.1" || got.GetRemoteAddress().GetSocketAddress().GetPortValue() != 50000 {
		t.Errorf("connection %v, want %v and %v", got, local, remote)
	}
	if v := st.Counter("listener.test.transport.tap.buffered_submit").Value(); v != 1 {
		t.Errorf("buffered_submit %d, want 1", v)
	}
}

// The streamed segments and their sequence numbers, as Envoy's socket
// tapper numbers them: 1, advanced by each event's bytes, and by one more
// for the close.
func TestStreamedTrace(t *testing.T) {
	s, rec, st := staticSocket(t, true, true, 3, 1024)
	drive(t, s, "hello", 5, "world")
	var got []string
	for i, w := range rec.got {
		seg := w.GetSocketStreamedTraceSegment()
		if seg == nil {
			t.Fatalf("submission %d is not a streamed segment", i)
		}
		if i == 0 {
			if seg.GetConnection().GetRemoteAddress().GetSocketAddress().GetPortValue() != 50000 {
				t.Errorf("first segment %v: want the connection", seg)
			}
			continue
		}
		ev := seg.GetEvent()
		if ev.GetConnection() == nil {
			t.Errorf("event %v: set_connection_per_event wants the connection", ev)
		}
		got = append(got, eventText(ev)+"@"+strconv.FormatUint(ev.GetSeqNum(), 10))
	}
	want := "read:hel+@1 write:world@6 closed@12"
	if strings.Join(got, " ") != want {
		t.Errorf("segments %q, want %q", strings.Join(got, " "), want)
	}
	if v := st.Counter("listener.test.transport.tap.streamed_submit").Value(); v != 4 {
		t.Errorf("streamed_submit %d, want 4", v)
	}
}

func TestNoMatchNoWrap(t *testing.T) {
	s, _, _ := staticSocket(t, false, false, 4, 4)
	m, err := tap.CompileMatch(&matcherv3.MatchPredicate{Rule: &matcherv3.MatchPredicate_NotMatch{
		NotMatch: &matcherv3.MatchPredicate{Rule: &matcherv3.MatchPredicate_AnyMatch{AnyMatch: true}}}}, "match")
	if err != nil {
		t.Fatal(err)
	}
	s.static.Match = m
	c := &fakeConn{}
	if got := s.Wrap(c, local, remote); got != net.Conn(c) {
		t.Errorf("a connection the match refuses is wrapped: %T", got)
	}
}

func tapWith(match *matcherv3.MatchPredicate) *tapsockv3.Tap {
	return &tapsockv3.Tap{
		CommonConfig: &commontapv3.CommonExtensionConfig{ConfigType: &commontapv3.CommonExtensionConfig_StaticConfig{StaticConfig: &tapv3.TapConfig{
			Match: match,
			OutputConfig: &tapv3.OutputConfig{Sinks: []*tapv3.OutputSink{{
				OutputSinkType: &tapv3.OutputSink_FilePerTap{FilePerTap: &tapv3.FilePerTapSink{PathPrefix: "/tmp/x"}}}}},
		}}},
		TransportSocket: &corev3.TransportSocket{Name: "envoy.transport_sockets.raw_buffer"},
	}
}

func TestCompileRefusals(t *testing.T) {
	anyMatch := &matcherv3.MatchPredicate{Rule: &matcherv3.MatchPredicate_AnyMatch{AnyMatch: true}}
	headers := &matcherv3.MatchPredicate{Rule: &matcherv3.MatchPredicate_HttpRequestHeadersMatch{HttpRequestHeadersMatch: &matcherv3.HttpHeadersMatch{}}}
	for name, tc := range map[string]struct {
		tap  *tapsockv3.Tap
		want string
	}{
		"header match": {tapWith(headers), "common_config.static_config.match.http_request_headers_match: not supported"},
		"nested header match": {tapWith(&matcherv3.MatchPredicate{Rule: &matcherv3.MatchPredicate_OrMatch{
			OrMatch: &matcherv3.MatchPredicate_MatchSet{Rules: []*matcherv3.MatchPredicate{anyMatch, headers}}}}),
			"common_config.static_config.match.or_match.rules[1].http_request_headers_match: not supported"},
		"min_streamed_sent_bytes unstreamed": {func() *tapsockv3.Tap {
			t := tapWith(anyMatch)
			t.GetCommonConfig().GetStaticConfig().GetOutputConfig().MinStreamedSentBytes = wrapperspb.UInt32(1)
			return t
		}(), "common_config.static_config.output_config.min_streamed_sent_bytes: only with output_config.streaming"},
		"no inner socket":  {func() *tapsockv3.Tap { t := tapWith(anyMatch); t.TransportSocket = nil; return t }(), "transport_socket: required"},
		"no common config": {&tapsockv3.Tap{TransportSocket: &corev3.TransportSocket{Name: "raw"}}, "common_config: admin_config or static_config is required"},
		"empty config id": {&tapsockv3.Tap{TransportSocket: &corev3.TransportSocket{Name: "raw"},
			CommonConfig: &commontapv3.CommonExtensionConfig{ConfigType: &commontapv3.CommonExtensionConfig_AdminConfig{AdminConfig: &commontapv3.AdminConfig{}}}},
			"common_config.admin_config.config_id: required"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(tc.tap, &tap.Registry{}, stats.NewStore().Scope("x."), nil)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want one starting %q", err, tc.want)
			}
		})
	}
	if _, err := Compile(tapWith(anyMatch), nil, stats.NewStore().Scope("x."), nil); err != nil {
		t.Errorf("any_match: %v", err)
	}
	streamed := tapWith(anyMatch)
	streamed.GetCommonConfig().GetStaticConfig().GetOutputConfig().Streaming = true
	streamed.GetCommonConfig().GetStaticConfig().GetOutputConfig().MinStreamedSentBytes = wrapperspb.UInt32(64)
	if s, err := Compile(streamed, nil, stats.NewStore().Scope("x."), nil); err != nil || s.static.MinStreamedSent != 64 {
		t.Errorf("streamed min_streamed_sent_bytes: %v", err)
	}
}

func TestAdminRegistration(t *testing.T) {
	reg := &tap.Registry{}
	s, err := Compile(&tapsockv3.Tap{
		TransportSocket: &corev3.TransportSocket{Name: "raw"},
		CommonConfig: &commontapv3.CommonExtensionConfig{ConfigType: &commontapv3.CommonExtensionConfig_AdminConfig{
			AdminConfig: &commontapv3.AdminConfig{ConfigId: "sock"}}},
	}, reg, stats.NewStore().Scope("x."), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &fakeConn{}
	if got := s.Wrap(c, local, remote); got != net.Conn(c) {
		t.Errorf("wrapped with no /tap session attached")
	}
	sess, err := reg.AttachTap([]byte(`{"config_id":"sock","tap_config":{"match":{"any_match":true},"output_config":{"sinks":[{"streaming_admin":{}}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Wrap(c, local, remote).(*conn); !ok {
		t.Errorf("not wrapped while a /tap session is attached")
	}
	sess.Detach()
	_ = s.Close()
	_ = s.Close()
	if reg.HasFilters() {
		t.Errorf("the config id is still registered after Close")
	}
}

// fixedRuntime answers every key with v.
type fixedRuntime uint64

func (f fixedRuntime) Uint64(string, uint64) uint64 { return uint64(f) }

// tap_enabled samples connections: its default share, which its runtime
// key overrides.
func TestTapEnabled(t *testing.T) {
	compile := func(percent uint32, rt runtime.Reader) *Socket {
		t.Helper()
		tp := tapWith(&matcherv3.MatchPredicate{Rule: &matcherv3.MatchPredicate_AnyMatch{AnyMatch: true}})
		tp.GetCommonConfig().GetStaticConfig().TapEnabled = &corev3.RuntimeFractionalPercent{
			RuntimeKey: "tap.share", DefaultValue: &typev3.FractionalPercent{Numerator: percent}}
		s, err := Compile(tp, nil, stats.NewStore().Scope("x."), rt)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	wrapped := func(s *Socket) bool {
		_, ok := s.Wrap(&fakeConn{}, local, remote).(*conn)
		return ok
	}
	for name, tc := range map[string]struct {
		s    *Socket
		want bool
	}{
		"0% by default":          {compile(0, nil), false},
		"100% by default":        {compile(100, nil), true},
		"0% by the runtime key":  {compile(100, fixedRuntime(0)), false},
		"all by the runtime key": {compile(0, fixedRuntime(100)), true},
	} {
		for range 20 {
			if got := wrapped(tc.s); got != tc.want {
				t.Fatalf("%s: wrapped %v, want %v", name, got, tc.want)
			}
		}
	}
}

// A trace carries tap_enabled's rate on its first message only.
func TestConfiguredSampleRate(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		s, rec, _ := staticSocket(t, streaming, false, 1024, 1024)
		s.static.SampleRate = &typev3.FractionalPercent{Numerator: 25}
		drive(t, s, "in", 2, "out")
		for i, w := range rec.got {
			if got := w.GetConfiguredSampleRate().GetNumerator(); (i == 0) != (got == 25) {
				t.Errorf("streaming=%v: message %d configured_sample_rate %v", streaming, i, w.GetConfiguredSampleRate())
			}
		}
	}
}

// segmentsText renders the batched segments after the first (the
// connection's), one per submission, their events separated by commas.
func segmentsText(t *testing.T, rec *recordSink) []string {
	t.Helper()
	var got []string
	for i, w := range rec.got[1:] {
		seg := w.GetSocketStreamedTraceSegment()
		if seg.GetEvents() == nil || seg.GetEvent() != nil {
			t.Fatalf("submission %d is not a segment of events: %v", i+1, w)
		}
		var evs []string
		for _, ev := range seg.GetEvents().GetEvents() {
			evs = append(evs, eventText(ev)+"@"+strconv.FormatUint(ev.GetSeqNum(), 10))
		}
		got = append(got, strings.Join(evs, ","))
	}
	return got
}

// min_streamed_sent_bytes gathers the streamed events, whole, in segments
// of events sent once they hold that many bytes, and at the close.
func TestBatchedStreamedTrace(t *testing.T) {
	s, rec, st := staticSocket(t, true, false, 3, 3)
	s.static.MinStreamedSent = 4
	drive(t, s, "hello", 2, "world!!")
	if rec.got[0].GetSocketStreamedTraceSegment().GetConnection() == nil {
		t.Errorf("first submission %v: want the connection", rec.got[0])
	}
	// Not cut at max_buffered_*_bytes (3); numbered as streamed events.
	want := "read:he@1,read:ll@3 | read:o@5,write:world!!@6 | closed@14"
	if got := strings.Join(segmentsText(t, rec), " | "); got != want {
		t.Errorf("segments %q, want %q", got, want)
	}
	if v := st.Counter("listener.test.transport.tap.streamed_submit").Value(); v != 4 {
		t.Errorf("streamed_submit %d, want 4", v)
	}
}

// A batch whose events span 15 seconds goes out however small.
func TestBatchedStreamedTraceAge(t *testing.T) {
	s, rec, _ := staticSocket(t, true, true, 1024, 1024)
	s.static.MinStreamedSent = 1000
	c := s.Wrap(&fakeConn{in: bytes.NewReader([]byte("hello"))}, local, remote)
	tc := c.(*conn)
	clock := time.Unix(0, 0)
	tc.t.now = func() time.Time { clock = clock.Add(10 * time.Second); return clock }
	buf := make([]byte, 2)
	for {
		if _, err := c.Read(buf); err != nil {
			break
		}
	}
	if _, err := c.Write([]byte("world")); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	// Events at 10, 20, 30 s: the third is 20 s after the first.
	want := "read:he@1,read:ll@3,read:o@5 | write:world@6,closed@12"
	if got := strings.Join(segmentsText(t, rec), " | "); got != want {
		t.Errorf("segments %q, want %q", got, want)
	}
	for _, w := range rec.got[1:] {
		for _, ev := range w.GetSocketStreamedTraceSegment().GetEvents().GetEvents() {
			if ev.GetConnection() == nil {
				t.Errorf("event %v: set_connection_per_event wants the connection", ev)
			}
		}
	}
}
