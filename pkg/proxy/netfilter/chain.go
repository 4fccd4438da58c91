package netfilter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
)

// Chain is a built filter chain: read filters, then a terminal filter. It
// is what a listener hands each connection of the chain to.
type Chain struct {
	reads    []ReadFilter
	data     []DataFilter
	terminal Terminal
}

// NewChain checks that filters are read filters ending with one terminal
// filter and returns their chain. Errors name the filter's index.
func NewChain(filters []Filter) (*Chain, error) {
	if len(filters) == 0 {
		return nil, errors.New("filters: a filter chain needs a terminal filter (such as tcp_proxy or http_connection_manager)")
	}
	ch := &Chain{}
	last := len(filters) - 1
	for i, f := range filters[:last] {
		rf, reads := f.(ReadFilter)
		df, data := f.(DataFilter)
		if !reads && !data {
			return nil, fmt.Errorf("filters[%d]: a terminal filter must be the last in the filter chain", i)
		}
		if reads {
			ch.reads = append(ch.reads, rf)
		}
		if data {
			ch.data = append(ch.data, df)
		}
	}
	t, ok := filters[last].(Terminal)
	if !ok {
		return nil, fmt.Errorf("filters[%d]: the last filter of a chain must be a terminal filter (such as tcp_proxy or http_connection_manager)", last)
	}
	ch.terminal = t
	return ch, nil
}

// HandleConn runs the read filters on a new connection, then hands it to
// the terminal filter; it implements listener.ConnHandler.
func (ch *Chain) HandleConn(c net.Conn) {
	if _, ok := c.(Conn); !ok && len(ch.reads) > 0 {
		c = &hookedConn{Conn: c}
	}
	if ch.Admit(c) {
		ch.Serve(c)
	}
}

// Admit runs the read filters on a new connection and reports whether it
// goes on to Serve. A connection a read filter refuses goes to the
// terminal filter's Refused, when it has one, and is closed. A listener
// admits a connection before its TLS handshake, as Envoy runs the read
// filters when the connection is made; c must then be a Conn.
func (ch *Chain) Admit(c net.Conn) bool {
	if len(ch.reads) == 0 {
		return true
	}
	fc, ok := c.(Conn)
	if !ok {
		_ = c.Close()
		return false
	}
	for _, rf := range ch.reads {
		if r := rf.OnNewConnection(fc); r != nil {
			ch.refuse(c, r)
			return false
		}
	}
	return true
}

// Serve hands an admitted connection, its TLS handshake done, to the data
// filters and then to the terminal filter.
func (ch *Chain) Serve(c net.Conn) {
	for _, df := range ch.data {
		if r := df.OnData(c); r != nil {
			ch.refuse(c, r)
			return
		}
	}
	ch.terminal.HandleConn(c)
}

// refuse has the terminal filter account for a refused connection, when it
// does, and closes the connection.
func (ch *Chain) refuse(c net.Conn, r *Refusal) {
	if rr, ok := ch.terminal.(RefusalRecorder); ok {
		rr.Refused(c, r)
	}
	_ = c.Close()
}

// hookedConn gives a connection that is not a Conn (one a listener did
// not make) the close hooks of one.
type hookedConn struct {
	net.Conn
	ConnState
	mu     sync.Mutex
	closed bool
	hooks  []func()
}

// OnClose implements Conn.
func (h *hookedConn) OnClose(f func()) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		f()
		return
	}
	h.hooks = append(h.hooks, f)
	h.mu.Unlock()
}

// Close closes the connection and runs the hooks, the first time.
func (h *hookedConn) Close() error {
	err := h.Conn.Close()
	h.mu.Lock()
	hooks := h.hooks
	first := !h.closed
	h.closed, h.hooks = true, nil
	h.mu.Unlock()
	if first {
		for _, f := range hooks {
			f()
		}
	}
	return err
}

// Terminal returns the chain's terminal filter.
func (ch *Chain) Terminal() Terminal { return ch.terminal }

// Closers returns the chain's read and data filters that hold resources
// (a gRPC channel to a rate limit service): the owner of the chain closes
// them once its connections are gone.
func (ch *Chain) Closers() []io.Closer {
	var out []io.Closer
	for _, f := range ch.reads {
		if c, ok := f.(io.Closer); ok {
			out = append(out, c)
		}
	}
	for _, f := range ch.data {
		if c, ok := f.(io.Closer); ok && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// Close closes the terminal filter (see Terminal): it stops taking
// connections while the open ones drain. It leaves the read and data
// filters alone on purpose: connections still in them use what they hold
// (a call to the rate limit service in flight), so their owner closes
// them through Closers once the connections are gone, and closing them
// here too would close them twice.
func (ch *Chain) Close() error { return ch.terminal.Close() }

// CloseFilters closes the filters of a chain that will not run (one whose
// build failed): each filter that holds resources (an io.Closer, the
// terminal filter included) is closed once, whatever lists it appears in.
func CloseFilters(filters []Filter) error {
	var (
		errs   []error
		closed []io.Closer
	)
	for _, f := range filters {
		if c, ok := f.(io.Closer); ok && !slices.Contains(closed, c) {
			closed = append(closed, c)
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// Shutdown shuts the terminal filter down (see Terminal).
func (ch *Chain) Shutdown(ctx context.Context) error { return ch.terminal.Shutdown(ctx) }
