// Package listener binds the proxy's listening sockets, accepts connections
// and hands each to the network filter chain chosen for it. It knows nothing
// of HTTP: a filter chain is anything that can take over a connection.
package listener

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/go-logr/logr"
)

// ConnHandler takes ownership of an accepted connection: it must close it.
type ConnHandler interface {
	HandleConn(c net.Conn)
}

// Config is what a listener needs to run.
type Config struct {
	Name      string
	Address   string // host:port, port 0 allowed
	Direction corev3.TrafficDirection
	Handler   ConnHandler
	Log       logr.Logger
}

// Listener is one bound listening socket and its accept loop.
type Listener struct {
	cfg Config

	mu      sync.Mutex
	ln      net.Listener
	stopped bool
	done    chan struct{}
}

// AddressString renders a socket address as host:port ("[::1]:80" for IPv6).
func AddressString(sa *corev3.SocketAddress) string {
	return net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10))
}

// New returns an unbound listener.
func New(cfg Config) *Listener {
	return &Listener{cfg: cfg, done: make(chan struct{})}
}

// Name returns the configured listener name.
func (l *Listener) Name() string { return l.cfg.Name }

// Direction returns the configured traffic direction.
func (l *Listener) Direction() corev3.TrafficDirection { return l.cfg.Direction }

// Bind opens the socket. A port of 0 gets one from the kernel; Addr reports it.
func (l *Listener) Bind() error {
	ln, err := net.Listen("tcp", l.cfg.Address)
	if err != nil {
		return fmt.Errorf("listener %q: cannot bind %s: %w", l.cfg.Name, l.cfg.Address, err)
	}
	l.mu.Lock()
	l.ln = ln
	l.mu.Unlock()
	return nil
}

// Addr returns the bound address, or nil before Bind.
func (l *Listener) Addr() net.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln == nil {
		return nil
	}
	return l.ln.Addr()
}

// Serve accepts until Stop. It returns nil after Stop and the accept error
// otherwise.
func (l *Listener) Serve() error {
	defer close(l.done)
	l.mu.Lock()
	ln := l.ln
	l.mu.Unlock()
	if ln == nil {
		return fmt.Errorf("listener %q: Serve before Bind", l.cfg.Name)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			l.mu.Lock()
			stopped := l.stopped
			l.mu.Unlock()
			if stopped || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("listener %q: accept: %w", l.cfg.Name, err)
		}
		go l.cfg.Handler.HandleConn(c)
	}
}

// Stop closes the socket so no new connection is accepted; connections
// already handed over are left to their handler.
func (l *Listener) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.stopped = true
	if l.ln != nil {
		_ = l.ln.Close()
	}
}

// Done is closed when Serve has returned.
func (l *Listener) Done() <-chan struct{} { return l.done }
