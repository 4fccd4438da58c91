// Package httpconn is the HTTP connection manager: the network filter that
// speaks HTTP on a downstream connection, matches each request against the
// route table and runs the HTTP filters.
//
// This first slice answers from direct_response routes over net/http's
// server (HTTP/1.1 and h2c with prior knowledge). The proxying path, with its
// own codec over pooled buffers, replaces the net/http server behind the same
// Manager API.
package httpconn

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// ServerName is the default value of the server response header.
const ServerName = "outrigger"

// Manager serves HTTP on the connections handed to it.
type Manager struct {
	statPrefix string
	routes     *router.Table
	log        logr.Logger

	conns chan net.Conn
	srv   *http.Server

	closeOnce sync.Once
	closed    chan struct{}
}

// New builds a manager from its configuration. Errors name the field path
// below the http_connection_manager.
func New(cfg *hcmv3.HttpConnectionManager, deps Deps) (*Manager, error) {
	log := deps.Log
	rc := cfg.GetRouteConfig()
	if rc == nil {
		return nil, errors.New("route_config: an inline route configuration is required")
	}
	table, err := router.Compile(rc)
	if err != nil {
		return nil, fmt.Errorf("route_config.%w", err)
	}
	m := &Manager{
		statPrefix: cfg.GetStatPrefix(),
		routes:     table,
		log:        log,
		conns:      make(chan net.Conn),
		closed:     make(chan struct{}),
	}
	protocols := new(http.Protocols)
	switch cfg.GetCodecType() {
	case hcmv3.HttpConnectionManager_HTTP1:
		protocols.SetHTTP1(true)
	case hcmv3.HttpConnectionManager_HTTP2:
		protocols.SetUnencryptedHTTP2(true)
	case hcmv3.HttpConnectionManager_AUTO:
		protocols.SetHTTP1(true)
		protocols.SetUnencryptedHTTP2(true)
	default:
		return nil, fmt.Errorf("codec_type: %v is not supported by Outrigger", cfg.GetCodecType())
	}
	m.srv = &http.Server{
		Handler:           http.HandlerFunc(m.serveHTTP),
		Protocols:         protocols,
		ReadHeaderTimeout: time.Minute,
		ErrorLog:          nil,
	}
	return m, nil
}

// Start begins serving the connections HandleConn receives. New does not
// start anything, so a configuration can be built and checked without side
// effects.
func (m *Manager) Start() {
	go func() { _ = m.srv.Serve(connListener{m}) }()
}

// HandleConn implements listener.ConnHandler.
func (m *Manager) HandleConn(c net.Conn) {
	select {
	case m.conns <- c:
	case <-m.closed:
		_ = c.Close()
	}
}

func (m *Manager) serveHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("server", ServerName)
	route := m.routes.Match(r.Host, r.URL.RequestURI())
	if route == nil {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	d := route.Direct
	if d.Body != "" {
		w.Header().Set("content-type", "text/plain")
		w.Header().Set("content-length", strconv.Itoa(len(d.Body)))
	}
	w.WriteHeader(int(d.Status))
	_, _ = w.Write([]byte(d.Body))
}

// Close stops serving: idle connections close at once, and connections with
// requests in flight close when their responses are done.
func (m *Manager) Close() error {
	m.closeOnce.Do(func() { close(m.closed) })
	return m.srv.Close()
}

// connListener adapts the manager's hand-over channel to net.Listener so the
// HTTP server can take connections the listener accepted.
type connListener struct{ m *Manager }

func (l connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.m.conns:
		return c, nil
	case <-l.m.closed:
		return nil, net.ErrClosed
	}
}

func (l connListener) Close() error   { return nil }
func (l connListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
