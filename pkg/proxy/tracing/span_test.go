package tracing

import (
	"testing"
	"time"
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
