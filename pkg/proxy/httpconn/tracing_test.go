package httpconn

import (
	"slices"
	"strconv"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
)

func TestPercentRounding(t *testing.T) {
	cases := []struct {
		p    *typev3.Percent
		den  uint64
		want fraction
	}{
		{nil, 10000, fraction{Num: 10000, Den: 10000}},
		{&typev3.Percent{Value: 0.01}, 10000, fraction{Num: 1, Den: 10000}},
		{&typev3.Percent{Value: 12.345}, 10000, fraction{Num: 1235, Den: 10000}},
		{&typev3.Percent{Value: 50.4}, 100, fraction{Num: 50, Den: 100}},
		{&typev3.Percent{Value: 0}, 100, fraction{Num: 0, Den: 100}},
	}
	for _, c := range cases {
		if got := percent(c.p, c.den); got != c.want {
			t.Errorf("percent(%v, %d) = %v, want %v", c.p, c.den, got, c.want)
		}
	}
}

func TestFeatureEnabled(t *testing.T) {
	half := fraction{Num: 5000, Den: 10000}
	cases := []struct {
		name   string
		rt     RuntimeValues
		random uint64
		want   bool
	}{
		{"below the default", nil, 4999, true},
		{"at the default", nil, 5000, false},
		{"modulo the denominator", nil, 14999, true},
		{"runtime percent replaces the default", fixedRuntime{"k": 10}, 9, true},
		{"runtime percent, above", fixedRuntime{"k": 10}, 10, false},
		{"runtime zero", fixedRuntime{"k": 0}, 0, false},
		{"runtime above 100 is always", fixedRuntime{"k": 101}, 99, true},
	}
	for _, c := range cases {
		if got := featureEnabled(c.rt, "k", half, c.random); got != c.want {
			t.Errorf("%s: featureEnabled = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestUUIDReason(t *testing.T) {
	cases := map[string]traceReason{
		"01234567-89ab-4def-8123-456789abcdef":  notTraceable,
		"01234567-89ab-adef-8123-456789abcdef":  traceServiceForced,
		"01234567-89ab-bdef-8123-456789abcdef":  traceSampling,
		"01234567-89ab-cdef-8123-456789abcdef":  traceClientForced,
		"not-a-uuid":                            notTraceable,
		"01234567-89ab-bdef-8123-456789abcdef0": notTraceable,
	}
	for id, want := range cases {
		if got := uuidReason(id); got != want {
			t.Errorf("uuidReason(%q) = %v, want %v", id, got, want)
		}
	}
}

// TestParseHex8 checks the request id's sampling number against strconv,
// which read it before.
func TestParseHex8(t *testing.T) {
	for _, id := range []string{
		"01234567-89ab", "ffffffff", "FFFFFFFF", "aBcDeF09", "00000000",
		"0123456g", "+1234567", "0x123456", "1234 678", "-1234567", "12_45678",
	} {
		want, err := strconv.ParseUint(id[:8], 16, 64)
		got, ok := parseHex8(id)
		if ok != (err == nil) || got != want {
			t.Errorf("parseHex8(%q) = %d, %v; strconv: %d, %v", id, got, ok, want, err)
		}
	}
	// Every byte value at every position, among valid digits.
	for pos := range 8 {
		for c := range 256 {
			b := []byte("9aF0b1E7")
			b[pos] = byte(c)
			id := string(b)
			want, err := strconv.ParseUint(id, 16, 64)
			got, ok := parseHex8(id)
			if ok != (err == nil) || got != want {
				t.Fatalf("parseHex8(%q) = %d, %v; strconv: %d, %v", id, got, ok, want, err)
			}
		}
	}
}

// TestSpanHeadersMatchGet checks the one-pass search of the span's request
// headers against headerList.Get, name by name: absent, present once,
// given twice (joined), and beside names of the same lengths.
func TestSpanHeadersMatchGet(t *testing.T) {
	lists := [][]field{
		nil,
		{{"host", "a"}, {"user-agent", "curl"}, {"x-request-id", "id"}},
		{{"content-type", "application/grpc"}, {"x-forwarded-proto", "https"}, {"x-client-trace-id", "c"},
			{"x-envoy-downstream-service-cluster", "dc"}, {"user-agent", "u1"}, {"user-agent", "u2"}},
		// Same lengths as the names looked for, other names.
		{{"content-typo", "x"}, {"x-request-ix", "y"}, {"x-forwarded-prot0", "z"}, {"user-agenT", "w"},
			{"x-envoy-downstream-service-clustex", "v"}, {"x-client-trace-i_", "q"}},
		{{"x-request-id", "a"}, {"x-request-id", "b"}, {"x-request-id", "c"}},
		{{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, {"tracestate", "a=1"},
			{"x-envoy-force-trace", "true"}, {"x-envoy-decorator-operation", "op"}, {"tracestate", "b=2"},
			{"x-b3-traceid", "b3"}, {"user-agent", "u"}},
		{{"traceparenT", "x"}, {"tracestatE", "y"}, {"x-envoy-force-tracE", "z"},
			{"x-envoy-decorator-operatioN", "w"}},
		// Same first and last eight bytes, another byte between.
		{{"x-clientXtrace-id", "a"}, {"x-forwardedXproto", "b"}, {"x-envoy-Xorce-trace", "c"},
			{"x-envoy-decoraXor-operation", "d"}, {"x-envoy-downstream-Xervice-cluster", "e"},
			{"x-forwarded-proto", "f"}},
	}
	var th startHeaders
	var hv spanHeaders
	in := func(t *spanHeaderTable, k int) bool {
		name := spanHeaderNames[k]
		return t.byLen[len(name)][0] == uint8(k) || t.byLen[len(name)][1] == uint8(k)
	}
	for _, fields := range lists {
		h := headerList{fields: fields}
		th.find(&h, startHeaderTable)
		hv.find(&h, finishHeaderTable)
		for k, name := range spanHeaderNames {
			want, wantOK := h.Get(name)
			if !in(finishHeaderTable, k) {
				want, wantOK = "", false
			}
			if got, ok := hv.get(k); got != want || ok != wantOK {
				t.Errorf("%v: finish %s = %q, %v; want %q, %v", fields, name, got, ok, want, wantOK)
			}
			want, wantOK = h.Get(name)
			if !in(startHeaderTable, k) {
				continue
			}
			if got, ok := th.get(k); got != want || ok != wantOK {
				t.Errorf("%v: start %s = %q, %v; Get gives %q, %v", fields, name, got, ok, want, wantOK)
			}
			if got, ok := th.Get(name); got != want || ok != wantOK {
				t.Errorf("%v: startHeaders.Get(%s) = %q, %v; Get gives %q, %v", fields, name, got, ok, want, wantOK)
			}
		}
		// The pass of both tables finds each of their names.
		var all startHeaders
		all.find(&h, sampledHeaderTable)
		for k, name := range spanHeaderNames {
			want, wantOK := h.Get(name)
			if got, ok := all.get(k); got != want || ok != wantOK {
				t.Errorf("%v: the pass of both tables gives %s = %q, %v; Get gives %q, %v", fields, name, got, ok, want, wantOK)
			}
		}
		// Names outside the one pass (Zipkin's) are searched.
		for _, name := range []string{"x-b3-traceid", "b3", "host"} {
			want, wantOK := h.Get(name)
			if got, ok := th.Get(name); got != want || ok != wantOK {
				t.Errorf("%v: startHeaders.Get(%s) = %q, %v; Get gives %q, %v", fields, name, got, ok, want, wantOK)
			}
		}
	}
}

// TestSharesMatchFeatureEnabled: the sampling keys resolved once per
// snapshot draw as featureEnabled reads them per request, for every kind
// of runtime value.
func TestSharesMatchFeatureEnabled(t *testing.T) {
	defs := []fraction{{Num: 5000, Den: 10000}, {Num: 0, Den: 100}, {Num: 100, Den: 100}}
	runtimes := []RuntimeValues{nil, fixedRuntime{}, fixedRuntime{keyRandomSampling: 10},
		fixedRuntime{keyRandomSampling: 0}, fixedRuntime{keyRandomSampling: 101}, fixedRuntime{keyRandomSampling: 100}}
	for _, rt := range runtimes {
		var tc tracingConfig
		sh := tc.shares(rt, new(samplingShares))
		for _, def := range defs {
			for random := uint64(0); random < 20000; random += 7 {
				want := featureEnabled(rt, keyRandomSampling, def, random)
				if got := sh.random.enabled(def, random); got != want {
					t.Fatalf("runtime %v, default %v, random %d: %v, featureEnabled %v", rt, def, random, got, want)
				}
			}
		}
	}
}

// snapshotRuntime is the server's view of a runtime: the latest
// snapshot's values, and the snapshot itself.
type snapshotRuntime struct{ rt *runtime.Runtime }

func (v snapshotRuntime) Uint64(key string, def uint64) uint64 {
	return v.rt.Snapshot().Uint64(key, def)
}
func (v snapshotRuntime) Bool(key string, def bool) bool { return v.rt.Snapshot().Bool(key, def) }
func (v snapshotRuntime) Fraction(key string) (num, den uint64, ok bool) {
	return v.rt.Snapshot().Fraction(key)
}
func (v snapshotRuntime) Snapshot() *runtime.Snapshot { return v.rt.Snapshot() }

// TestSharesFollowSnapshots: the sampling keys resolved for a snapshot are
// reused while it is current, and a new snapshot (/runtime_modify) is
// resolved again: integer percentages and FractionalPercent values alike.
func TestSharesFollowSnapshots(t *testing.T) {
	rt, err := runtime.New(&bootstrapv3.LayeredRuntime{}, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rv := snapshotRuntime{rt}
	tc := tracingConfig{snapshots: rv}
	def := fraction{Num: 10000, Den: 10000}
	check := func(step string) {
		t.Helper()
		sh := tc.shares(rv, new(samplingShares))
		if sh.snap != rt.Snapshot() {
			t.Fatalf("%s: shares of an old snapshot", step)
		}
		for _, c := range []struct {
			key string
			got share
		}{{keyRandomSampling, sh.random}, {keyClientEnabled, sh.client}, {keyGlobalEnabled, sh.global}} {
			for random := uint64(0); random < 2_000_000; random += 997 {
				want := featureEnabled(rv, c.key, def, random)
				if got := c.got.enabled(def, random); got != want {
					t.Fatalf("%s: %s at %d: %v, featureEnabled %v", step, c.key, random, got, want)
				}
			}
		}
	}
	check("no values")
	if first, again := tc.shares(rv, nil), tc.shares(rv, nil); first != again || tc.resolved.Load().snap != rt.Snapshot() {
		t.Fatal("the resolution of an unchanged snapshot is not kept")
	}
	if err := rt.Modify(map[string]string{keyRandomSampling: "25", keyGlobalEnabled: "{numerator: 5, denominator: MILLION}"}); err != nil {
		t.Fatal(err)
	}
	check("integer and fraction")
	if err := rt.Modify(map[string]string{keyRandomSampling: "101", keyClientEnabled: "0", keyGlobalEnabled: "numerator: 1\ndenominator: HUNDRED"}); err != nil {
		t.Fatal(err)
	}
	check("above 100, zero, block fraction")
}

// TestSetDelMatchesSetThenDel: the one-pass SetDel that W3C propagation
// uses leaves the fields as Set then Del does, whatever the fields hold.
func TestSetDelMatchesSetThenDel(t *testing.T) {
	lists := [][]field{
		nil,
		{{"host", "a"}, {"user-agent", "curl"}},
		{{"traceparent", "old"}, {"host", "a"}},
		{{"tracestate", "s"}, {"host", "a"}, {"traceparent", "old"}},
		{{"traceparent", "1"}, {"x", "y"}, {"traceparent", "2"}},
		{{"tracestate", "1"}, {"tracestate", "2"}, {"traceparenT", "z"}},
	}
	// W3C's pair has a path of its own; any other pair, the general one.
	for _, names := range [][2]string{{"traceparent", "tracestate"}, {"x", "host"}, {"tracestate", "traceparent"},
		{"traceparent", "traceparenT"}, {"host", "x"}} {
		for _, fields := range lists {
			var want, got headerList
			want.fields = append([]field(nil), fields...)
			got.fields = append([]field(nil), fields...)
			want.Set(names[0], "new")
			want.Del(names[1])
			got.SetDel(names[0], "new", names[1])
			if !slices.Equal(got.fields, want.fields) {
				t.Errorf("%v: SetDel(%s, %s) gives %v, Set and Del %v", fields, names[0], names[1], got.fields, want.fields)
			}
		}
	}
}

// w3cFieldLists are request fields with and without the W3C names, for
// the tests of the propagation through the start's pass.
func w3cFieldLists() [][]field {
	return [][]field{
		nil,
		{{"host", "a"}, {"user-agent", "curl"}},
		{{"traceparent", "old"}, {"host", "a"}},
		{{"tracestate", "s"}, {"user-agent", "curl"}},
		{{"traceparent", "1"}, {"x", "y"}, {"traceparent", "2"}},
	}
}

// TestStartHeadersSetDelMatchesSetThenDel: the injection through the
// start's pass gives what Set then Del gives, whether the pass saw the
// W3C names or not, and whatever was added, set or deleted after it.
func TestStartHeadersSetDelMatchesSetThenDel(t *testing.T) {
	lists := w3cFieldLists()
	edits := map[string]func(h *headerList){
		"none":            func(*headerList) {},
		"add traceparent": func(h *headerList) { h.Add("traceparent", "added") },
		"set traceparent": func(h *headerList) { h.Set("traceparent", "set") },
		"add tracestate":  func(h *headerList) { h.Add("tracestate", "added") },
		"del then add":    func(h *headerList) { h.Del("host"); h.Add("tracestate", "x") },
		"del traceparent": func(h *headerList) { h.Del("traceparent") },
		"add other":       func(h *headerList) { h.Add("x-other", "1") },
		"add, add, del first": func(h *headerList) {
			h.Add("x-other", "1")
			h.Add("traceparent", "added")
			h.Del("x-other")
		},
		"del, add other, add": func(h *headerList) {
			h.Del("host")
			h.Add("x-other", "1")
			h.Add("tracestate", "added")
		},
		"setdel traceparent": func(h *headerList) { h.SetDel("traceparent", "sd", "x") },
	}
	for _, names := range [][2]string{{"traceparent", "tracestate"}, {"x", "host"}, {"tracestate", "traceparent"}} {
		for _, fields := range lists {
			for edit, fn := range edits {
				var want, got headerList
				want.fields = append([]field(nil), fields...)
				got.fields = append([]field(nil), fields...)
				var th startHeaders
				th.find(&got, startHeaderTable)
				fn(&want)
				fn(&got)
				want.Set(names[0], "new")
				want.Del(names[1])
				th.SetDel(names[0], "new", names[1])
				// A second injection (a retry) replaces the first.
				want.Set(names[0], "again")
				want.Del(names[1])
				th.SetDel(names[0], "again", names[1])
				if !slices.Equal(got.fields, want.fields) {
					t.Errorf("%v, %s: SetDel(%s, %s) gives %v, Set and Del %v", fields, edit, names[0], names[1], got.fields, want.fields)
				}
			}
		}
	}
}

// TestNoW3CMatchesFields: the start's pass tells a request without
// traceparent and tracestate (the connection manager then adds the
// traceparent itself) only when its fields have neither, after every kind
// of edit since the pass; and it tells it for a request that came without
// them when nothing of their names' lengths was appended.
func TestNoW3CMatchesFields(t *testing.T) {
	lists := w3cFieldLists()
	edits := map[string]func(h *headerList){
		"none":              func(*headerList) {},
		"add traceparent":   func(h *headerList) { h.Add("traceparent", "added") },
		"set tracestate":    func(h *headerList) { h.Set("tracestate", "set") },
		"del traceparent":   func(h *headerList) { h.Del("traceparent") },
		"add other":         func(h *headerList) { h.Add("x-envoy-expected-rq-timeout-ms", "1") },
		"del then add":      func(h *headerList) { h.Del("host"); h.Add("tracestate", "x") },
		"add, del other":    func(h *headerList) { h.Add("x-other", "1"); h.Add("traceparent", "a"); h.Del("x-other") },
		"setdel":            func(h *headerList) { h.SetDel("traceparent", "sd", "tracestate") },
		"reset then append": func(h *headerList) { h.reset(); h.Add("tracestate", "x") },
	}
	for _, fields := range lists {
		for edit, fn := range edits {
			var h headerList
			h.fields = append([]field(nil), fields...)
			var th startHeaders
			th.find(&h, startHeaderTable)
			fn(&h)
			_, tp := h.Get("traceparent")
			_, ts := h.Get("tracestate")
			got := th.noW3C()
			if got && (tp || ts) {
				t.Errorf("%v, %s: noW3C with fields %v", fields, edit, h.fields)
			}
			cameWithout := !slices.ContainsFunc(fields, func(f field) bool { return f.name == "traceparent" || f.name == "tracestate" })
			if want := cameWithout && (edit == "none" || edit == "add other"); want && !got {
				t.Errorf("%v, %s: noW3C false for fields %v", fields, edit, h.fields)
			}
		}
	}
}

// TestUnsampledInjectAllocatesNothing guards the propagation through the
// start's pass: with room for the field, nothing is allocated.
func TestUnsampledInjectAllocatesNothing(t *testing.T) {
	var h headerList
	h.fields = make([]field, 0, 8)
	var th startHeaders
	allocs := testing.AllocsPerRun(100, func() {
		h.fields = append(h.fields[:0], field{"user-agent", "curl"}, field{"x-request-id", "id"})
		th.find(&h, startHeaderTable)
		h.Set("x-envoy-expected-rq-timeout-ms", "15000")
		th.SetDel("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", "tracestate")
	})
	if allocs != 0 {
		t.Errorf("%v allocations per injection", allocs)
	}
	if v, _ := h.Get("traceparent"); v == "" {
		t.Error("no traceparent")
	}
	// A retry's injection finds the field there: the connection
	// manager must not add a second one.
	if th.noW3C() {
		t.Error("noW3C after the traceparent was added")
	}
}

// TestFinishHeadersMatchFind: the finished span's headers taken from the
// start's kept pass (startHeaders.finish) equal a new pass over the
// fields, for lists with and without the names, after every kind of edit
// between the start and the finish: appends (of a name the pass saw, or
// not), values set in place, fields deleted, deletions then appends, the
// list emptied, the request id rewritten as the sampling does, and a list
// other than the pass's.
func TestFinishHeadersMatchFind(t *testing.T) {
	lists := [][]field{
		nil,
		{{"host", "a"}, {"user-agent", "curl"}, {"x-request-id", "id"}},
		{{"content-type", "application/grpc"}, {"x-forwarded-proto", "https"}, {"x-client-trace-id", "c"},
			{"x-envoy-downstream-service-cluster", "dc"}, {"user-agent", "u1"}, {"user-agent", "u2"}},
		{{"x-request-id", "a"}, {"x-request-id", "b"}, {"tracestate", "s"}},
		{{"user-agent", "u"}, {"x-envoy-decorator-operation", "op"}, {"traceparent", "p"}},
	}
	edits := map[string]func(h *headerList){
		"none":                  func(*headerList) {},
		"append another name":   func(h *headerList) { h.Add("x-envoy-expected-rq-timeout-ms", "15000") },
		"append a seen name":    func(h *headerList) { h.Add("user-agent", "late") },
		"append a new name":     func(h *headerList) { h.Add("x-forwarded-proto", "http") },
		"set a seen name":       func(h *headerList) { h.Set("user-agent", "set") },
		"set a new name":        func(h *headerList) { h.Set("content-type", "text/plain") },
		"delete a seen name":    func(h *headerList) { h.Del("x-request-id") },
		"delete another name":   func(h *headerList) { h.Del("host") },
		"delete then append":    func(h *headerList) { h.Del("user-agent"); h.Add("x-client-trace-id", "x") },
		"traceparent set":       func(h *headerList) { h.SetDel("traceparent", "v", "tracestate") },
		"set another, in place": func(h *headerList) { h.Set("host", "b") },
		"emptied":               func(h *headerList) { h.reset() },
		"emptied and refilled":  func(h *headerList) { h.reset(); h.Add("user-agent", "new") },
	}
	for _, fields := range lists {
		for what, edit := range edits {
			for _, c := range []struct{ rewrite, all bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
				rewrite := c.rewrite
				s := &stream{}
				s.reqHeaders.fields = slices.Clone(fields)
				th := &s.traceHeaders
				if c.all {
					th.find(&s.reqHeaders, sampledHeaderTable)
				} else {
					// The decision's pass alone: not reused.
					th.find(&s.reqHeaders, startHeaderTable)
				}
				th.reused = false
				if id, ok := th.get(shRequestID); ok && rewrite {
					// What setRequestIDReason does, with a longer id.
					s.idBuf = append(append(s.idBuf[:0], id...), "-b"...)
					th.setRequestID(&s.reqHeaders, id, view(s.idBuf))
				}
				th.keep()
				edit(&s.reqHeaders)
				got := th.finish(&s.reqHeaders)
				var want spanHeaders
				want.find(&s.reqHeaders, finishHeaderTable)
				for k, name := range spanHeaderNames {
					if finishHeaders&(1<<k) == 0 {
						continue
					}
					g, gok := got.get(k)
					w, wok := want.get(k)
					if g != w || gok != wok {
						t.Errorf("%v, %s (id rewritten %v, pass of all %v): %s = %q, %v; a new pass gives %q, %v", fields, what, rewrite, c.all, name, g, gok, w, wok)
					}
				}
			}
		}
	}
	// A pass over another list is not reused.
	var other, mine headerList
	other.Add("user-agent", "other")
	mine.Add("user-agent", "mine")
	var th startHeaders
	th.find(&other, sampledHeaderTable)
	th.keep()
	if v, _ := th.finish(&mine).get(shUserAgent); v != "mine" {
		t.Errorf("the finish over another list reused the pass: %q", v)
	}
}

// TestSetRequestIDMatchesSet: the request id rewritten through the start's
// pass leaves the fields Set leaves, and the pass holds the new value:
// one field (in place), several (joined: Set), and after edits, appends or
// a rewrite already made since the pass.
func TestSetRequestIDMatchesSet(t *testing.T) {
	lists := [][]field{
		{{"host", "a"}, {"x-request-id", "id-1"}, {"user-agent", "u"}},
		{{"x-request-id", "id-1"}},
		{{"x-request-id", "id-1"}, {"host", "a"}, {"x-request-id", "id-2"}},
	}
	changes := map[string]func(h *headerList){
		"none":              func(*headerList) {},
		"a field deleted":   func(h *headerList) { h.Del("host") },
		"a field appended":  func(h *headerList) { h.Add("x-request-id", "late") },
		"the id set before": func(h *headerList) { h.Set("x-request-id", "other") },
	}
	for _, fields := range lists {
		for what, change := range changes {
			for _, table := range []*spanHeaderTable{startHeaderTable, sampledHeaderTable} {
				h := headerList{fields: slices.Clone(fields)}
				want := headerList{fields: slices.Clone(fields)}
				var th startHeaders
				th.find(&h, table)
				id, _ := th.get(shRequestID)
				change(&h)
				change(&want)
				th.setRequestID(&h, id, "new")
				want.Set("x-request-id", "new")
				if !slices.Equal(h.fields, want.fields) {
					t.Errorf("%v, %s: fields %v, Set gives %v", fields, what, h.fields, want.fields)
				}
				if v, _ := th.get(shRequestID); v != "new" {
					t.Errorf("%v, %s: the pass holds %q", fields, what, v)
				}
			}
		}
	}
}
