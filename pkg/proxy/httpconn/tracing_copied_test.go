package httpconn

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpconn/http1"
	"github.com/outrigger-dev/outrigger/pkg/proxy/requestid"
)

// TestNameMaskSeparatesCommonHeaders: the names the tracing's start looks
// for fall in buckets of none of the common request headers, so that a
// request with only those has its copied fields skipped; each table's
// buckets hold its names.
func TestNameMaskSeparatesCommonHeaders(t *testing.T) {
	common := []string{
		"accept", "accept-encoding", "accept-language", "accept-charset", "cookie", "referer",
		"authorization", "cache-control", "pragma", "origin", "if-none-match", "if-modified-since",
		"if-match", "range", "user-agent", "content-type", "sec-fetch-mode", "sec-fetch-site",
		"sec-fetch-dest", "sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform",
		"upgrade-insecure-requests", "dnt", "priority", "x-forwarded-for", "x-forwarded-proto",
		"x-forwarded-host", "x-forwarded-port", "x-real-ip", "x-requested-with", "x-csrf-token",
		"forwarded", "via", "baggage", "grpc-timeout", "x-envoy-expected-rq-timeout-ms",
		"x-envoy-external-address", "x-envoy-attempt-count", "x-envoy-internal",
	}
	for _, name := range common {
		if nameBit(name)&startHeaderTable.names != 0 {
			t.Errorf("%s shares a bucket with a name the start looks for", name)
		}
	}
	for _, table := range []struct {
		t   *spanHeaderTable
		set uint16
	}{{startHeaderTable, decisionHeaders}, {finishHeaderTable, finishHeaders}, {sampledHeaderTable, finishHeaders | decisionHeaders}} {
		for k, name := range spanHeaderNames {
			if in := table.t.names&nameBit(name) != 0; table.set&(1<<k) != 0 && !in {
				t.Errorf("%s is not in its table's buckets", name)
			}
		}
	}
}

// TestCopiedFieldsPassMatchesFind: the start's pass over the fields the
// copy notes (the fields appended since, when no copied name is in the
// table's buckets) finds what a pass over every field finds, for requests
// with and without the names, after the edits a request gets between its
// copy and its tracing's start (appends of names looked for or not,
// values set, deletions, deletions then appends, the list emptied and
// refilled); and it skips the copied fields of a request with none.
func TestCopiedFieldsPassMatchesFind(t *testing.T) {
	requests := [][]field{
		nil,
		{{"host", "a"}, {"user-agent", "curl"}, {"accept", "*/*"}},
		{{"user-agent", "curl"}, {"x-request-id", "id-1"}},
		{{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, {"tracestate", "a=1"}},
		{{"x-envoy-force-trace", "true"}, {"x-client-trace-id", "c"}, {"x-envoy-decorator-operation", "op"}},
		{{"content-type", "application/grpc"}, {"x-forwarded-proto", "https"}, {"user-agent", "u"},
			{"x-envoy-downstream-service-cluster", "dc"}},
		{{"tracestate", "b=2"}, {"accept", "*/*"}, {"tracestate", "c=3"}},
	}
	edits := map[string]func(h *headerList){
		"none":                   func(*headerList) {},
		"the proxy's appends":    func(h *headerList) { h.Add("x-forwarded-proto", "http"); h.Set("x-request-id", "gen") },
		"an id replaced":         func(h *headerList) { h.Set("x-request-id", "gen") },
		"a traceparent appended": func(h *headerList) { h.Add("traceparent", "p") },
		"an id appended":         func(h *headerList) { h.Add("x-request-id", "second") },
		"a copied name deleted":  func(h *headerList) { h.Del("user-agent"); h.Del("host") },
		"deleted, then appended": func(h *headerList) { h.Del("accept"); h.Add("tracestate", "s"); h.Add("x-other", "1") },
		"a value set":            func(h *headerList) { h.Set("user-agent", "set") },
		"emptied":                func(h *headerList) { h.reset() },
		"emptied and refilled":   func(h *headerList) { h.reset(); h.Add("x-request-id", "new"); h.Add("host", "b") },
	}
	for _, fields := range requests {
		var req http1.Request
		for _, f := range fields {
			req.Headers = append(req.Headers, http1.Header{Name: []byte(f.name), Value: []byte(f.value)})
		}
		for what, edit := range edits {
			for _, table := range []*spanHeaderTable{startHeaderTable, sampledHeaderTable} {
				// prepared: prepareRequest's appends noted, with the
				// request id it generates when the request has none.
				for _, prepared := range []bool{false, true} {
					s := &stream{}
					// An earlier request on the stream: its fields are no
					// longer the copy's.
					s.reqHeaders.Add("traceparent", "earlier")
					s.reqHeaders.reset()
					s.copyRequestHeaders(&req)
					if prepared {
						h := &s.reqHeaders
						h.Set("x-forwarded-proto", "http")
						h.Add("x-forwarded-for", "192.0.2.1")
						h.Add("via", "1.1 outrigger")
						if !h.Has("x-request-id") {
							s.idBuf = append(s.idBuf[:0], "generated-id"...)
							s.genID.at = uintptr(unsafe.Pointer(&s.idBuf[0]))
							h.Set("x-request-id", view(s.idBuf))
						}
						s.copied.prepare(h)
					}
					edit(&s.reqHeaders)
					s.findStartHeaders(table)
					got := &s.traceHeaders
					var want startHeaders
					want.find(&s.reqHeaders, table)
					for k, name := range spanHeaderNames {
						g, gok := got.get(k)
						w, wok := want.get(k)
						if g != w || gok != wok || (gok && got.values[k].at != want.values[k].at) {
							t.Errorf("%v, %s, prepared %v: %s = %q, %v (at %d); a pass of every field gives %q, %v (at %d)",
								fields, what, prepared, name, g, gok, got.values[k].at, w, wok, want.values[k].at)
						}
					}
				}
			}
		}
	}
	// A request with none of the names: the copied fields are skipped.
	s := &stream{}
	s.copyRequestHeaders(&http1.Request{Headers: http1.Headers{
		{Name: []byte("user-agent"), Value: []byte("curl")}, {Name: []byte("accept"), Value: []byte("*/*")},
	}})
	s.idBuf = append(s.idBuf, "gen"...)
	s.reqHeaders.Add("x-request-id", view(s.idBuf))
	if at, id := s.copied.start(&s.reqHeaders, startHeaderTable.names, 0); at != 2 || id != -1 {
		t.Errorf("the start's pass looks at the fields from %d (id at %d), want the one appended", at, id)
	}
	// prepareRequest's appends noted, the id it generated last: no field
	// left to look at but those appended since.
	s.copied.prepare(&s.reqHeaders)
	s.genID.at = uintptr(unsafe.Pointer(&s.idBuf[0]))
	s.reqHeaders.Add("x-envoy-force-trace", "true")
	if at, id := s.copied.start(&s.reqHeaders, startHeaderTable.names, s.genID.at); at != 3 || id != 2 {
		t.Errorf("after prepareRequest the start's pass looks at the fields from %d (id at %d), want the one appended, id at 2", at, id)
	}
	// An id not generated is looked for.
	if at, id := s.copied.start(&s.reqHeaders, startHeaderTable.names, 0); at != 3 || id != -1 {
		t.Errorf("no id generated: the pass from %d (id at %d), want 3 (none)", at, id)
	}
	// Not for a table with prepareRequest's names (here a copied one
	// too: every field).
	if at, id := s.copied.start(&s.reqHeaders, sampledHeaderTable.names, s.genID.at); at != 0 || id != -1 {
		t.Errorf("the sampled table's pass from %d (id at %d), want 0 (none)", at, id)
	}
	// Nor after an edit, which may move the id: the pass sees it.
	s.reqHeaders.Del("user-agent")
	if at, id := s.copied.start(&s.reqHeaders, startHeaderTable.names, s.genID.at); at > 1 || id != -1 {
		t.Errorf("after an edit the pass starts at %d (id at %d), want the id's field looked at", at, id)
	}
	// Not noted (HTTP/2): every field.
	s.copied = copiedFields{names: ^nameMask(0)}
	if at, _ := s.copied.start(&s.reqHeaders, startHeaderTable.names, s.genID.at); at != 0 {
		t.Errorf("fields not noted: the pass starts at %d", at)
	}
}

// TestGeneratedIDNumber: the number the sampling reads from a request id
// this proxy generated is parseHex8's, known without a parse; an id that
// is not the one generated for the request (a client's, one rewritten
// into the same buffer, none generated) is parsed.
func TestGeneratedIDNumber(t *testing.T) {
	s := &stream{m: &Manager{}}
	s.m.cfg.requestID = requestid.Default()
	for range 1000 {
		// As prepareRequest generates it.
		s.idBuf = requestid.AppendUUIDHex8(s.idBuf[:0], &s.genID.hex8)
		s.genID.at = uintptr(unsafe.Pointer(&s.idBuf[0]))
		id := view(s.idBuf)
		want, _ := parseHex8(id)
		got, ok := s.generatedIDNumber(id)
		if !ok || got != want {
			t.Fatalf("%s: generated number %d, %v; parseHex8 %d", id, got, ok, want)
		}
		// The same bytes elsewhere are parsed.
		if _, ok := s.generatedIDNumber(fmt.Sprint(id)); ok {
			t.Fatalf("%s: a copy taken as the generated id", id)
		}
	}
	// A client's id rewritten by the sampling into the buffer that held
	// the generated one.
	s.reqHeaders.Add("x-request-id", "00000001-0000-4000-8000-000000000000")
	client, _ := s.reqHeaders.Get("x-request-id")
	s.setRequestIDReason(client, traceSampling)
	id, _ := s.reqHeaders.Get("x-request-id")
	if view(s.idBuf) != id || id[:8] != "00000001" {
		t.Fatalf("rewritten id %q, buffer %q", id, s.idBuf)
	}
	if n, ok := s.generatedIDNumber(id); ok {
		t.Errorf("a client's id rewritten into the buffer taken as generated (%d)", n)
	}
}

// TestSetRequestIDReasonInPlace: the trace reason written into a request
// id this proxy generated changes the byte under its field and the
// start's pass (no search, no copy), and leaves the fields Set would
// leave; a client's id goes through Set as before. Either way the number
// the sampling reads is unchanged.
func TestSetRequestIDReasonInPlace(t *testing.T) {
	for _, generated := range []bool{true, false} {
		s := &stream{m: &Manager{}}
		s.m.cfg.requestID = requestid.Default()
		s.reqHeaders.Add("user-agent", "curl")
		if generated {
			// As prepareRequest does.
			s.idBuf = requestid.AppendUUIDHex8(s.idBuf[:0], &s.genID.hex8)
			s.genID.at = uintptr(unsafe.Pointer(&s.idBuf[0]))
			s.reqHeaders.Set("x-request-id", view(s.idBuf))
		} else {
			s.reqHeaders.Add("x-request-id", "0123abcd-0000-4000-8000-000000000000")
		}
		s.reqHeaders.Add("x-forwarded-proto", "http")
		th := &s.traceHeaders
		th.find(&s.reqHeaders, startHeaderTable)
		id, _ := th.get(shRequestID)
		before, _ := parseHex8(id)
		want := headerList{fields: slices.Clone(s.reqHeaders.fields)}
		wantID := id[:uuidTraceByte] + "b" + id[uuidTraceByte+1:]
		want.Set("x-request-id", wantID)
		s.setRequestIDReason(id, traceSampling)
		if !slices.Equal(s.reqHeaders.fields, want.fields) {
			t.Errorf("generated %v: fields %v, Set gives %v", generated, s.reqHeaders.fields, want.fields)
		}
		if v, _ := th.get(shRequestID); v != wantID {
			t.Errorf("generated %v: the pass holds %q, want %q", generated, v, wantID)
		}
		v, _ := s.reqHeaders.Get("x-request-id")
		n, ok := s.generatedIDNumber(v)
		if !ok {
			n, _ = parseHex8(v)
		}
		if ok != generated || n != before {
			t.Errorf("generated %v: number %d (known %v), was %d", generated, n, ok, before)
		}
	}
}

// TestSetDelAfterFinishPass: once the finished span's headers were found
// by a pass of their own (which does not look for traceparent), an
// injection searches the fields, rather than trust the pass: no second
// traceparent.
func TestSetDelAfterFinishPass(t *testing.T) {
	var h headerList
	h.Add("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	h.Add("user-agent", "curl")
	var th startHeaders
	th.find(&h, startHeaderTable)
	th.keep()
	h.Del("user-agent")
	th.finish(&h)
	th.SetDel("traceparent", "new", "tracestate")
	if vs := h.fields; len(vs) != 1 || vs[0] != (field{"traceparent", "new"}) {
		t.Errorf("fields %v, want the one traceparent replaced", vs)
	}
}
