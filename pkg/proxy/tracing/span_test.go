package tracing

import (
	"testing"
	"time"
	"unsafe"
)

// recorder is a Reporter that keeps what it is given.
type recorder struct{ spans []*Span }

func (r *recorder) Report(s *Span) { r.spans = append(r.spans, s) }

// TestLocalSpan: a local span that is not sampled finishes in place and
// stays its caller's; one that is sampled reaches the reporter as a pooled
// span with the same context, name, times and tags, and the local span is
// clean for the next request. Two local spans draw different ids.
func TestLocalSpan(t *testing.T) {
	var (
		pool   SpanPool
		rec    recorder
		local  Span
		other  Span
		start  = time.Now()
		finish = start.Add(time.Millisecond)
	)
	s := pool.Local(&local, &rec, nil)
	if s != &local {
		t.Fatal("Local did not start the span in the caller's")
	}
	s.Trace, s.ID = s.NewTraceID(false), s.NewSpanID()
	s.SetOperation("op")
	s.Finish(finish)
	if len(rec.spans) != 0 {
		t.Fatal("an unsampled local span was reported")
	}
	if local.pool != nil || local.Name != "" || !local.Trace.IsZero() || !local.local {
		t.Errorf("the finished local span was not reset: %+v", local)
	}

	s = pool.Local(&local, &rec, nil)
	s.Trace, s.ID, s.Parent = s.NewTraceID(false), s.NewSpanID(), s.NewSpanID()
	s.Name, s.Start, s.Sampled, s.TraceState, s.Kind = "ingress", start, true, "a=b", Client
	s.SetOperation("decorated")
	trace, id, parent := s.Trace, s.ID, s.Parent
	s.SetTag("k", "v")
	p := s.Pooled()
	if p == &local || p.local {
		t.Fatal("Pooled kept the local span")
	}
	if local.pool != nil || len(local.Tags) != 0 {
		t.Error("Pooled did not release the local span")
	}
	p.AddTag("late", "x")
	p.Finish(finish)
	if len(rec.spans) != 1 || rec.spans[0] != p {
		t.Fatalf("reported %v, want the pooled span", rec.spans)
	}
	if p.Trace != trace || p.ID != id || p.Parent != parent || p.Name != "decorated" || p.TraceState != "a=b" ||
		p.Kind != Client || !p.Start.Equal(start) || !p.End.Equal(finish) || !p.Sampled {
		t.Errorf("the pooled span lost its context: %+v", p)
	}
	if v, _ := p.Tag("k"); v != "v" {
		t.Errorf("tag k = %q", v)
	}
	if v, _ := p.Tag("late"); v != "x" {
		t.Errorf("tag late = %q", v)
	}

	// A sampled local span finished without Pooled still reaches the
	// reporter as a pooled span.
	s = pool.Local(&local, &rec, nil)
	s.Sampled, s.Name = true, "n"
	s.Finish(finish)
	if len(rec.spans) != 2 || rec.spans[1] == &local || rec.spans[1].Name != "n" {
		t.Errorf("a sampled local span reported as %v", rec.spans)
	}

	a := pool.Local(&local, nil, nil).NewSpanID()
	b := pool.Local(&other, nil, nil).NewSpanID()
	if a == b || a.IsZero() || b.IsZero() {
		t.Errorf("local spans drew ids %v and %v", a, b)
	}
}

// encodedRecorder is an EncodedReporter that keeps the encodings of what
// it is given, and a SpanEncoder writing a span's name and tags.
type encodedRecorder struct{ spans []string }

func (r *encodedRecorder) ReportEncoded(e SpanEncoder, s *Span) {
	r.spans = append(r.spans, string(e.AppendSpan(nil, s)))
}

func (r *encodedRecorder) AppendSpan(b []byte, s *Span) []byte {
	b = append(b, s.Name...)
	for _, t := range s.Tags {
		b = append(b, ';')
		b = append(b, t.Key...)
		b = append(b, '=')
		b = append(b, t.Value...)
	}
	return b
}

// TestEncodeAtFinish: a pool that encodes at finish reports a sampled
// span's encoding, written while the strings it borrowed still held their
// values, and gives the span back at once (a local one stays its
// caller's, clean for its next span); an unsampled span is not encoded. Borrow makes the
// span keep its strings only when it is encoded at finish.
func TestEncodeAtFinish(t *testing.T) {
	var (
		pool  SpanPool
		rec   encodedRecorder
		local Span
		other recorder
	)
	pool.EncodeAtFinish(&rec, &rec)
	if !pool.EncodesAtFinish() {
		t.Fatal("EncodesAtFinish is false after EncodeAtFinish")
	}
	buf := []byte("abc")
	s := pool.Local(&local, &other, nil)
	s.Borrow()
	s.Sampled = true
	s.SetOperation(string(buf[:1]))
	s.AddTag("k", unsafeString(buf[1:]))
	s.SetTag("k2", "v2")
	if unsafe.StringData(s.Tags[0].Value) != &buf[1] {
		t.Error("a borrowing span copied its tag value")
	}
	s.Finish(time.Now())
	// The caller may now reuse its buffer.
	buf[0], buf[1] = 'x', 'y'
	if len(rec.spans) != 1 || rec.spans[0] != "a;k=bc;k2=v2" {
		t.Fatalf("encoded %q, want [a;k=bc;k2=v2]", rec.spans)
	}
	if len(other.spans) != 0 {
		t.Error("a span encoded at finish went to the reporter too")
	}
	if local.pool != nil || len(local.Tags) != 0 || local.borrow || !local.local {
		t.Errorf("the encoded local span was not reset: %+v", local)
	}

	s = pool.Local(&local, &other, nil)
	s.Borrow()
	s.SetTag("k", "v")
	s.Finish(time.Now())
	if len(rec.spans) != 1 {
		t.Error("an unsampled span was encoded")
	}

	// The next sampled request's span has its own tags only: a local
	// span's tags are cut, not cleared, and then overwritten.
	s = pool.Local(&local, &other, nil)
	s.Borrow()
	s.Sampled = true
	s.SetOperation("b")
	s.AddTag("n", "1")
	if len(s.Tags) != 1 || len(s.Encoded) != 0 {
		t.Errorf("the reused local span starts with tags %v, runs %v", s.Tags, s.Encoded)
	}
	s.Finish(time.Now())
	if len(rec.spans) != 2 || rec.spans[1] != "b;n=1" {
		t.Errorf("encoded %q, want the second span as b;n=1", rec.spans)
	}

	// Without an encoder, Borrow changes nothing: the span copies.
	var plain SpanPool
	s = plain.Get(&other, nil)
	s.Borrow()
	s.AddTag("k", unsafeString(buf[1:]))
	buf[1] = 'z'
	if v, _ := s.Tag("k"); v != "yc" {
		t.Errorf("a span without an encoder borrowed its tag: %q", v)
	}
}

// unsafeString views b.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
