package accesslog

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestDefaultFormatAppender renders random entries with DefaultFormat's
// specialised appender and with the loop over its parts: the lines must be
// the same bytes. Entries mix missing, empty and present values, status
// codes outside the table, every flag, zero and non-UTC start times, and
// request headers behind a plain HeaderGetter, a HeaderSetGetter (with
// repeated fields) and none.
func TestDefaultFormatAppender(t *testing.T) {
	f := Default()
	if f.text.defaultStart == nil {
		t.Fatal("the default format does not use its appender")
	}
	rng := rand.New(rand.NewPCG(19, 27))
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	for i := range 20000 {
		e := &Entry{
			Method:        pick("", "GET", "CONNECT"),
			Path:          pick("", "/", "/a/b?c=d"),
			Protocol:      pick("", "HTTP/1.1", "HTTP/2"),
			ResponseCode:  []int{0, -3, 99, 100, 200, 503, 599, 600, 1000}[rng.IntN(9)],
			ResponseFlags: ResponseFlags(rng.Uint32() & rng.Uint32()), // a quarter of the bits
			BytesReceived: rng.Uint64() >> rng.IntN(64),
			BytesSent:     rng.Uint64N(100000),
			Duration:      time.Duration(rng.Int64N(1e12) - 1e9),
			Authority:     pick("", "svc:8080"),
			UpstreamHost:  pick("", "127.0.0.1:80"),
		}
		if rng.IntN(5) > 0 {
			e.StartTime = time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(time.FixedZone("Z", rng.IntN(24)*1800-43200))
		}
		fields := randomFields(rng)
		switch rng.IntN(3) {
		case 0:
			e.RequestHeaders = fields
		case 1:
			m := headerMap{}
			for _, f := range fields {
				m[f[0]] = f[1]
			}
			e.RequestHeaders = m
		}
		if rng.IntN(2) == 0 {
			e.ResponseHeaders = headerMap{pick("x-envoy-upstream-service-time", "x-other"): pick("", "12")}
		}
		got, want := f.Append(nil, e), f.text.appendParts(nil, e)
		if string(got) != string(want) {
			t.Fatalf("entry %d (%+v):\n appender %q\n    parts %q", i, e, got, want)
		}
	}
}

// TestDefaultFormatAppenderOnlyForDefault: the appender serves the default
// format only, not with omit_empty_values nor for another format.
func TestDefaultFormatAppenderOnlyForDefault(t *testing.T) {
	for _, tc := range []struct {
		format string
		omit   bool
	}{{DefaultFormat, true}, {strings.TrimSuffix(DefaultFormat, "\n"), false}, {"%START_TIME%\n", false}} {
		f, err := Text(tc.format, tc.omit)
		if err != nil {
			t.Fatal(err)
		}
		if f.text.defaultStart != nil {
			t.Errorf("%q (omit %v) uses the default format's appender", tc.format, tc.omit)
		}
	}
	f, err := Text(DefaultFormat, false)
	if err != nil {
		t.Fatal(err)
	}
	if f.text.defaultStart == nil {
		t.Error("DefaultFormat written out does not use its appender")
	}
}

// fieldList is a HeaderSetGetter over fields in order, repeated names
// joined by "," as the connection manager's header list joins them.
type fieldList [][2]string

func (l fieldList) Get(name string) (string, bool) {
	var vs []string
	for _, f := range l {
		if f[0] == name {
			vs = append(vs, f[1])
		}
	}
	return strings.Join(vs, ","), len(vs) > 0
}

func (l fieldList) GetSet(names *HeaderNames) (v HeaderValues) {
	for i := range names.Len() {
		if val, ok := l.Get(names.Name(i)); ok {
			v.Values[i] = val
			v.Found |= 1 << i
		}
	}
	return v
}

// randomFields are up to six fields, named mostly after the default
// format's headers, some repeated, some empty.
func randomFields(rng *rand.Rand) fieldList {
	names := []string{"x-envoy-original-path", "x-forwarded-for", "user-agent", "x-request-id", "host", "accept"}
	values := []string{"", "v", "/orig?q", `a "b"`}
	var l fieldList
	for range rng.IntN(7) {
		l = append(l, [2]string{names[rng.IntN(len(names))], values[rng.IntN(len(values))]})
	}
	return l
}

// TestHeaderNamesIndex finds names of distinct and of equal lengths, and
// misses names of their lengths.
func TestHeaderNamesIndex(t *testing.T) {
	names := NewHeaderNames("user-agent", "x-request-id", "x-a", "x-b")
	for name, want := range map[string]int{
		"user-agent": 0, "x-request-id": 1, "x-a": 2, "x-b": 3, "x-c": -1, "user-agenT": -1, "host": -1, "": -1,
		strings.Repeat("x", 64+10): -1,
	} {
		if got := names.Index(name); got != want {
			t.Errorf("Index(%q) = %d, want %d", name, got, want)
		}
	}
}
