package zipkin

import (
	"bytes"
	"encoding/binary"
	"net/http"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// headers adapts http.Header to tracing's header interfaces.
type headers http.Header

func (h headers) Get(n string) (string, bool) {
	v, ok := h[http.CanonicalHeaderKey(n)]
	if !ok {
		return "", false
	}
	return v[0], true
}
func (h headers) Set(n, v string) { http.Header(h).Set(n, v) }
func (h headers) Del(n string)    { http.Header(h).Del(n) }

func TestExtractSampled(t *testing.T) {
	cases := []struct {
		name     string
		h        headers
		decision bool
		want     bool
	}{
		{"nothing: the decision", headers{}, true, true},
		{"x-b3-sampled 1", headers{"X-B3-Sampled": {"1"}}, false, true},
		{"x-b3-sampled true", headers{"X-B3-Sampled": {"true"}}, false, true},
		{"x-b3-sampled 0", headers{"X-B3-Sampled": {"0"}}, true, false},
		{"debug flag", headers{"X-B3-Flags": {"1"}}, false, true},
		{"b3 deny", headers{"B3": {"0"}}, true, false},
		{"b3 debug", headers{"B3": {"d"}}, false, true},
		{"b3 64-bit sampled", headers{"B3": {"463ac35c9f6413ad-a2fb4a1d1a96d312-1"}}, false, true},
		{"b3 128-bit with parent, not sampled", headers{"B3": {"463ac35c9f6413ad48485a3953bb6124-a2fb4a1d1a96d312-0-0020000000000001"}}, true, false},
		{"b3 without sampling", headers{"B3": {"463ac35c9f6413ad-a2fb4a1d1a96d312"}}, true, true},
	}
	for _, c := range cases {
		if got := extractSampled(c.h, c.decision); got != c.want {
			t.Errorf("%s: sampled = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestExtractContext(t *testing.T) {
	c, err := extractContext(headers{"X-B3-Traceid": {"463ac35c9f6413ad48485a3953bb6124"}, "X-B3-Spanid": {"a2fb4a1d1a96d312"}, "X-B3-Parentspanid": {"1"}}, true)
	if err != nil || traceIDHex(c.trace) != "463ac35c9f6413ad48485a3953bb6124" || c.span.Hex() != "a2fb4a1d1a96d312" || c.parent.Hex() != "0000000000000001" {
		t.Errorf("multi-header context = %+v, %v", c, err)
	}
	c, err = extractContext(headers{"B3": {"463ac35c9f6413ad-a2fb4a1d1a96d312-1-0020000000000001"}}, true)
	if err != nil || traceIDHex(c.trace) != "463ac35c9f6413ad" || c.parent.Hex() != "0020000000000001" {
		t.Errorf("single-header context = %+v, %v", c, err)
	}
	for name, h := range map[string]headers{
		"no span id":     {"X-B3-Traceid": {"463ac35c9f6413ad"}},
		"sampling only":  {"B3": {"1"}},
		"nothing at all": {},
	} {
		if _, err := extractContext(h, true); err != errNoContext {
			t.Errorf("%s: error = %v, want errNoContext", name, err)
		}
	}
	for name, h := range map[string]headers{
		"bad trace id": {"X-B3-Traceid": {"zz"}, "X-B3-Spanid": {"a2fb4a1d1a96d312"}},
		"bad span id":  {"X-B3-Traceid": {"463ac35c9f6413ad"}, "X-B3-Spanid": {"a2fb4a1d1a96d312ff"}},
		"bad parent":   {"X-B3-Traceid": {"463ac35c9f6413ad"}, "X-B3-Spanid": {"a2"}, "X-B3-Parentspanid": {"x"}},
		"bad b3":       {"B3": {"463ac35c9f6413ad-a2fb4a1d1a96d312-11"}},
	} {
		if _, err := extractContext(h, true); err == nil || err == errNoContext {
			t.Errorf("%s: error = %v, want a parse error", name, err)
		}
	}
}

func TestStartSpan(t *testing.T) {
	d := &driver{shared: true}
	in := headers{"X-B3-Traceid": {"463ac35c9f6413ad"}, "X-B3-Spanid": {"a2fb4a1d1a96d312"}, "X-B3-Sampled": {"1"}}
	s := d.StartSpan(in, tracing.StartOptions{Host: "svc", Start: time.Now()})
	if s.ID.Hex() != "a2fb4a1d1a96d312" || !s.Shared || !s.Sampled || s.Name != "svc" {
		t.Errorf("shared ingress span = %+v", s)
	}
	s = d.StartSpan(in, tracing.StartOptions{Host: "svc", Egress: true, Start: time.Now()})
	if s.ID.Hex() == "a2fb4a1d1a96d312" || s.Parent.Hex() != "a2fb4a1d1a96d312" || s.Kind != tracing.Client || s.Shared {
		t.Errorf("egress span = %+v", s)
	}
	out := headers{"B3": {"stale"}}
	s.Inject(out)
	if v, _ := out.Get("x-b3-spanid"); v != s.ID.Hex() {
		t.Errorf("x-b3-spanid = %q", v)
	}
	if v, _ := out.Get("x-b3-parentspanid"); v != "a2fb4a1d1a96d312" {
		t.Errorf("x-b3-parentspanid = %q", v)
	}
	if _, ok := out.Get("b3"); ok {
		t.Error("the client's b3 header was passed on")
	}
	if s := d.StartSpan(headers{"X-B3-Traceid": {"zz"}, "X-B3-Spanid": {"1"}}, tracing.StartOptions{Traced: true}); s != nil {
		t.Errorf("span from an invalid context = %+v, want none", s)
	}
	root := d.StartSpan(headers{}, tracing.StartOptions{Traced: true})
	if !root.Sampled || !root.Parent.IsZero() || traceIDHex(root.Trace) != root.ID.Hex() {
		t.Errorf("root span = %+v", root)
	}
}

func TestTimestampTraceIDs(t *testing.T) {
	start := time.Unix(0x65f0a1b2, 0)
	for _, long := range []bool{false, true} {
		d := &driver{shared: true, long: long, stamped: true}
		s := d.StartSpan(headers{}, tracing.StartOptions{Traced: true, Start: start})
		word := s.Trace[8:12]
		if long {
			word = s.Trace[0:4]
		}
		if got := binary.BigEndian.Uint32(word); got != 0x65f0a1b2 {
			t.Errorf("trace_id_128bit %v: the id's first 32 bits are %#x, want the epoch seconds %#x", long, got, 0x65f0a1b2)
		}
		if long && !bytes.Equal(s.Trace[8:], s.ID[:]) {
			t.Error("a 128-bit trace's low word is no longer the root span's id")
		}
		in := headers{"X-B3-Traceid": {"463ac35c9f6413ad"}, "X-B3-Spanid": {"a2fb4a1d1a96d312"}}
		if s := d.StartSpan(in, tracing.StartOptions{Start: start}); traceIDHex(s.Trace) != "463ac35c9f6413ad" {
			t.Errorf("a propagated trace id was changed: %s", traceIDHex(s.Trace))
		}
	}
}
