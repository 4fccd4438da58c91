package netfilter

import (
	"context"
	"net"
	"strings"
	"testing"
)

// terminal records the connections handed to it.
type terminal struct{ got []net.Conn }

func (t *terminal) HandleConn(c net.Conn)          { t.got = append(t.got, c) }
func (t *terminal) Close() error                   { return nil }
func (t *terminal) Shutdown(context.Context) error { return nil }

// gate lets connections through while open is set, and refuses them with
// its refusal otherwise.
type gate struct {
	open    bool
	refusal Refusal
	closes  int
}

func (g *gate) OnNewConnection(c Conn) *Refusal {
	c.OnClose(func() { g.closes++ })
	if g.open {
		return nil
	}
	return &g.refusal
}

// recorder is a terminal filter that records refused connections.
type recorder struct {
	terminal
	refused []*Refusal
}

func (r *recorder) Refused(_ net.Conn, why *Refusal) { r.refused = append(r.refused, why) }

func TestNewChain(t *testing.T) {
	tests := map[string]struct {
		filters []Filter
		want    string
	}{
		"empty":              {want: "filters: a filter chain needs a terminal filter"},
		"terminal not last":  {filters: []Filter{&terminal{}, &terminal{}}, want: "filters[0]: a terminal filter must be the last"},
		"no terminal at end": {filters: []Filter{&gate{}}, want: "filters[0]: the last filter of a chain must be a terminal filter"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := NewChain(tc.filters)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestChainRunsReadFilters(t *testing.T) {
	g, term := &gate{}, &terminal{}
	ch, err := NewChain([]Filter{g, term})
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer b.Close()
	ch.HandleConn(a) // refused by the gate: closed
	if len(term.got) != 0 {
		t.Fatal("a refused connection reached the terminal filter")
	}
	if _, err := a.Write([]byte("x")); err == nil {
		t.Error("the refused connection is still open")
	}
	g.open = true
	c, d := net.Pipe()
	defer c.Close()
	defer d.Close()
	ch.HandleConn(c)
	// A connection that is not a Conn gets the close hooks of one.
	if len(term.got) != 1 || term.got[0].(*hookedConn).Conn != c {
		t.Errorf("terminal got %v, want the connection", term.got)
	}
	if ch.Terminal() != term {
		t.Error("Terminal() is not the chain's terminal filter")
	}
	if g.closes != 1 {
		t.Errorf("close hooks ran %d times, want once (the refused connection)", g.closes)
	}
	_ = term.got[0].Close()
	_ = term.got[0].Close()
	if g.closes != 2 {
		t.Errorf("close hooks ran %d times, want 2: once per connection", g.closes)
	}
}

func TestChainRecordsRefusals(t *testing.T) {
	g := &gate{refusal: Refusal{Reason: "over_limit"}}
	rec := &recorder{}
	ch, err := NewChain([]Filter{g, rec})
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer b.Close()
	ch.HandleConn(a)
	if len(rec.refused) != 1 || rec.refused[0].Reason != "over_limit" {
		t.Errorf("refusals recorded %v, want the gate's", rec.refused)
	}
	if len(rec.got) != 0 {
		t.Error("a refused connection reached the terminal filter")
	}
}

// TestChainAdmitNeedsConn: a listener admits only its own connections,
// whose close the read filters can follow; any other is closed.
func TestChainAdmitNeedsConn(t *testing.T) {
	g, term := &gate{open: true}, &terminal{}
	ch, err := NewChain([]Filter{g, term})
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer b.Close()
	if ch.Admit(a) {
		t.Error("a connection without close hooks was admitted")
	}
	if _, err := a.Write([]byte("x")); err == nil {
		t.Error("the connection is still open")
	}
	// Without read filters every connection goes on.
	bare, err := NewChain([]Filter{term})
	if err != nil {
		t.Fatal(err)
	}
	if !bare.Admit(b) {
		t.Error("a chain with no read filters refused a connection")
	}
}

// closingGate is a gate that holds a resource.
type closingGate struct{ gate }

func (*closingGate) Close() error { return nil }

func TestChainClosers(t *testing.T) {
	held := &closingGate{}
	ch, err := NewChain([]Filter{&gate{}, held, &terminal{}})
	if err != nil {
		t.Fatal(err)
	}
	got := ch.Closers()
	if len(got) != 1 || got[0] != held {
		t.Errorf("Closers = %v, want the one filter that holds a resource", got)
	}
}

// closeCounter is a filter that holds a resource and counts its closes.
type closeCounter struct{ closes int }

func (c *closeCounter) Close() error { c.closes++; return nil }

// countingRead is a read filter that holds a resource.
type countingRead struct{ closeCounter }

func (*countingRead) OnNewConnection(Conn) *Refusal { return nil }

// countingBoth is a read filter that is also a data filter (both lists).
type countingBoth struct{ countingRead }

func (*countingBoth) OnData(net.Conn) *Refusal { return nil }

// countingTerminal is a terminal filter that counts its closes.
type countingTerminal struct {
	terminal
	closeCounter
}

func (t *countingTerminal) Close() error { return t.closeCounter.Close() }

// TestCloseFiltersClosesEachOnce checks that the filters of a chain that
// will not run are all closed, each once, and that a built chain's Close
// and Closers split them without overlap.
func TestCloseFiltersClosesEachOnce(t *testing.T) {
	read, both, term := &countingRead{}, &countingBoth{}, &countingTerminal{}
	plain := &gate{open: true}
	if err := CloseFilters([]Filter{read, plain, both, term}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]int{"read": read.closes, "read and data": both.closes, "terminal": term.closes} {
		if c != 1 {
			t.Errorf("%s filter closed %d times, want 1", name, c)
		}
	}

	read, both, term = &countingRead{}, &countingBoth{}, &countingTerminal{}
	ch, err := NewChain([]Filter{read, plain, both, term})
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range ch.Closers() {
		_ = c.Close()
	}
	for name, c := range map[string]int{"read": read.closes, "read and data": both.closes, "terminal": term.closes} {
		if c != 1 {
			t.Errorf("%s filter closed %d times by Close and Closers, want 1", name, c)
		}
	}
}
