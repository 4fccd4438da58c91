package httpconn

import (
	"strings"
	"testing"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"golang.org/x/net/http2"
)

// TestH2BlockMemoReplay checks when the memo replays a block: after the
// second decoding in a row of the same bytes at the same generation, not
// before, not for other bytes or another generation; and what it replays:
// every field of the request state the decoding made, in strings of its
// own that later recordings do not touch.
func TestH2BlockMemoReplay(t *testing.T) {
	decoded := func(path string) (*h2Stream, []byte) {
		st := &h2Stream{
			method: "GET", path: path, authority: "example.com", scheme: "http", host: "example.org", protocol: "websocket",
			fields:  []field{{"user-agent", "ua"}, {"cookie", "a=1"}, {"cookie", "b=2"}},
			cookies: 2, declared: 7, headerBytes: 123, sawRegular: true, teTrailers: true, expect100: true,
		}
		// Strings of a buffer that the stream's recycling overwrites.
		buf := []byte(st.path)
		st.path = view(buf)
		return st, buf
	}
	var m h2BlockMemo
	blockA, blockB := []byte{0x82, 0x84, 0xbe}, []byte{0x82, 0x85, 0xbe}
	fresh := func() *h2Stream { return &h2Stream{declared: -1} }

	if m.replay(fresh(), blockA, 1) {
		t.Fatal("an empty memo replayed")
	}
	a, abuf := decoded("/a")
	m.note(a, blockA, 1)
	if m.replay(fresh(), blockA, 1) {
		t.Fatal("a block seen once replayed")
	}
	m.note(a, blockA, 1)
	// The decoding's own strings go away with its stream.
	copy(abuf, "/z")
	st := fresh()
	if !m.replay(st, blockA, 1) {
		t.Fatal("a block seen twice in a row did not replay")
	}
	want, _ := decoded("/a")
	if st.method != want.method || st.path != want.path || st.authority != want.authority || st.scheme != want.scheme ||
		st.host != want.host || st.protocol != want.protocol || st.cookies != want.cookies || st.declared != want.declared ||
		st.headerBytes != want.headerBytes || st.sawRegular != want.sawRegular || st.teTrailers != want.teTrailers ||
		st.expect100 != want.expect100 || len(st.fields) != len(want.fields) {
		t.Fatalf("replayed %+v, want %+v", st, want)
	}
	for i := range st.fields {
		if st.fields[i] != want.fields[i] {
			t.Fatalf("field %d: %+v, want %+v", i, st.fields[i], want.fields[i])
		}
	}
	if m.replay(fresh(), blockA, 2) {
		t.Fatal("replayed at another generation")
	}
	if m.replay(fresh(), blockB, 1) {
		t.Fatal("replayed other bytes")
	}
	// Another block, twice: the first replay's strings stay as they were.
	b, _ := decoded("/b")
	m.note(b, blockB, 1)
	if m.replay(fresh(), blockA, 1) {
		t.Fatal("replayed a block no longer the last seen")
	}
	m.note(b, blockB, 1)
	if st2 := fresh(); !m.replay(st2, blockB, 1) || st2.path != "/b" {
		t.Fatalf("block B: replayed path %q, want /b", st2.path)
	}
	if st.path != "/a" || st.fields[2].value != "b=2" {
		t.Fatalf("an earlier replay's strings changed: path %q, %+v", st.path, st.fields)
	}
	// Blocks over maxMemoBlock are never remembered.
	long := make([]byte, maxMemoBlock+1)
	m.note(a, long, 1)
	m.note(a, long, 1)
	if m.replay(fresh(), long, 1) {
		t.Fatal("replayed a block over maxMemoBlock")
	}
}

// TestH2RepeatedRequestBlocks sends requests whose header blocks repeat
// (x/net's encoder indexes every field, so from the second request on a
// block is the same indexed bytes) on one connection, and changes a field
// in between, which adds to the dynamic table: the upstream must see each
// request's own fields, whether the server decoded its block or replayed
// a remembered one. A repeated block that makes a malformed request with
// one END_STREAM flag (content-length with no body) and a valid one
// without it is refused after a replay as well.
func TestH2RepeatedRequestBlocks(t *testing.T) {
	f := startH2Proxy(t, hcmv3.HttpConnectionManager_AUTO, nil)
	c := dialH2(t, f.addr)
	echoOf := func(c *h2Client, end bool, fields ...string) string {
		t.Helper()
		id := c.open(end, fields...)
		r := c.response(id)
		if r.reset || r.status() != "200" {
			t.Fatalf("stream %d: reset %v (%v), status %q\nframes received: %s", id, r.reset, r.resetCode, r.status(), c.traceString())
		}
		return withoutRequestID(r.body.String())
	}
	heads := [][]string{
		requestHead("GET", "/one", "x-case", "1", "cookie", "a=1", "cookie", "b=2", "te", "trailers"),
		requestHead("GET", "/one", "x-case", "2", "cookie", "a=1", "cookie", "b=2", "te", "trailers"),
		requestHead("GET", "/two", "x-case", "1"),
	}
	// What each head makes the upstream see, on connections of its own.
	var want []string
	for _, head := range heads {
		want = append(want, echoOf(dialH2(t, f.addr), true, head...))
	}
	if !strings.Contains(want[0], "cookie: a=1; b=2\n") || !strings.Contains(want[1], "x-case: 2\n") {
		t.Fatalf("unexpected echo:\n%s\n%s", want[0], want[1])
	}
	for round, i := range []int{0, 0, 0, 0, 1, 1, 1, 0, 0, 2, 2, 2, 2, 0, 1, 1, 1, 1} {
		if got := echoOf(c, true, heads[i]...); got != want[i] {
			t.Fatalf("request %d (head %d): the upstream saw\n%s\nwant\n%s", round, i, got, want[i])
		}
	}
	// The echo shows the body and how its length was sent upstream.
	post := requestHead("POST", "/post", "content-length", "3")
	postEcho := func(c *h2Client) string {
		id := c.open(false, post...)
		c.sendData(id, []byte("abc"), true)
		return withoutRequestID(c.response(id).body.String())
	}
	wantPost := postEcho(dialH2(t, f.addr))
	if !strings.Contains(wantPost, "content-length: 3\n") || !strings.HasSuffix(wantPost, "\nabc") {
		t.Fatalf("unexpected echo of the POST:\n%s", wantPost)
	}
	for round := range 5 {
		if got := postEcho(c); got != wantPost {
			t.Fatalf("POST %d: the upstream saw\n%s\nwant\n%s", round, got, wantPost)
		}
	}
	c.open(true, post...)
	c.wantGoAway(http2.ErrCodeProtocol)
}

// withoutRequestID is an echo without its x-request-id line, which each
// request has of its own.
func withoutRequestID(echo string) string {
	var b strings.Builder
	for line := range strings.Lines(echo) {
		if !strings.HasPrefix(line, "x-request-id: ") {
			b.WriteString(line)
		}
	}
	return b.String()
}
