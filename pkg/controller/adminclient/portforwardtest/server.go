// Package portforwardtest serves the API server's pods/portforward
// subresource in-process, with the kubelet's side behind it, so that the
// port-forward transport is tested without a cluster.
//
// The chain is the real one, minus the container runtime: the client
// upgrades to the API server (WebSocket carrying SPDY, or plain SPDY); the
// API server upgrades to the kubelet with SPDY and relays the bytes, taking
// them out of WebSocket messages when the client came that way (as the API
// server's tunnelling handler does); the kubelet serves it with the real
// ServePortForward and hands each stream to a PortForwarder, which here
// dials a loopback address instead of a pod's network namespace.
package portforwardtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/client-go/rest"
	clientportforward "k8s.io/client-go/tools/portforward"
	"k8s.io/kubelet/pkg/cri/streaming/portforward"
)

// DialFunc connects to port of a pod, as the container runtime would inside
// the pod's network namespace.
type DialFunc func(ctx context.Context, namespace, pod string, port int32) (net.Conn, error)

// Options configure a Server.
type Options struct {
	// Dial reaches a pod's port. Required.
	Dial DialFunc
	// RefuseWebSockets answers WebSocket upgrades 400, like an API server
	// without the PortForwardWebsockets feature, so that clients fall back
	// to SPDY.
	RefuseWebSockets bool
}

// Server is an API server that serves only pods/portforward.
type Server struct {
	apiserver *httptest.Server
	kubelet   *httptest.Server
	opts      Options

	webSocketUpgrades atomic.Int64
	spdyUpgrades      atomic.Int64
	refused           atomic.Int64

	mu      sync.Mutex
	streams int
}

// New starts a Server on loopback addresses; Close stops it.
func New(opts Options) (*Server, error) {
	if opts.Dial == nil {
		return nil, errors.New("portforwardtest: Options.Dial is required")
	}
	s := &Server{opts: opts}
	s.kubelet = httptest.NewServer(http.HandlerFunc(s.serveKubelet))
	kubeletURL, err := url.Parse(s.kubelet.URL)
	if err != nil {
		s.kubelet.Close()
		return nil, fmt.Errorf("portforwardtest: kubelet URL: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/namespaces/{namespace}/pods/{pod}/portforward", func(w http.ResponseWriter, r *http.Request) {
		s.serveAPI(w, r, kubeletURL)
	})
	s.apiserver = httptest.NewServer(mux)
	return s, nil
}

// Close stops both servers.
func (s *Server) Close() {
	s.apiserver.CloseClientConnections()
	s.apiserver.Close()
	s.kubelet.CloseClientConnections()
	s.kubelet.Close()
}

// Config is a client configuration for the server.
func (s *Server) Config() *rest.Config {
	return &rest.Config{Host: s.apiserver.URL, Timeout: 10 * time.Second}
}

// Upgrades counts the upgraded connections by kind, and the WebSocket
// upgrades refused.
func (s *Server) Upgrades() (webSocket, spdy, refused int64) {
	return s.webSocketUpgrades.Load(), s.spdyUpgrades.Load(), s.refused.Load()
}

// Streams counts the forwarded streams (one per forwarded connection).
func (s *Server) Streams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams
}

// serveAPI proxies an upgrade to the kubelet, as the API server's pod
// portforward handler does: a WebSocket request carrying the SPDY tunnelling
// subprotocol is answered by upgrading to the kubelet with SPDY first, then
// accepting the WebSocket with the protocol the kubelet chose, and carrying
// the SPDY bytes in WebSocket messages; a SPDY request is proxied as is.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, kubelet *url.URL) {
	target := *kubelet
	target.Path = "/portForward/" + r.PathValue("namespace") + "/" + r.PathValue("pod")
	if wsstream.IsWebSocketRequest(r) {
		if s.opts.RefuseWebSockets {
			s.refused.Add(1)
			http.Error(w, "websocket port-forward is not enabled", http.StatusBadRequest)
			return
		}
		s.tunnel(w, r, &target)
		return
	}
	backend, br, resp, err := upgradeToKubelet(&target, r.Header.Values(httpstream.HeaderProtocolVersion))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer func() { _ = backend.Close() }()
	s.spdyUpgrades.Add(1)
	client, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer func() { _ = client.Close() }()
	if err := resp.Write(client); err != nil {
		return
	}
	splice(client, backend, br)
}

// tunnel serves a WebSocket request that carries SPDY.
func (s *Server) tunnel(w http.ResponseWriter, r *http.Request, target *url.URL) {
	var protocols []string
	for _, p := range gwebsocket.Subprotocols(r) {
		if p, ok := strings.CutPrefix(p, tunnelPrefix); ok {
			protocols = append(protocols, p)
		}
	}
	if len(protocols) == 0 {
		http.Error(w, "unable to upgrade: no tunneling spdy protocols provided", http.StatusBadRequest)
		return
	}
	backend, br, resp, err := upgradeToKubelet(target, protocols)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer func() { _ = backend.Close() }()
	upgrader := gwebsocket.Upgrader{
		CheckOrigin:  func(*http.Request) bool { return true },
		Subprotocols: []string{tunnelPrefix + resp.Header.Get(httpstream.HeaderProtocolVersion)},
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.webSocketUpgrades.Add(1)
	client := clientportforward.NewTunnelingConnection("server", ws)
	defer func() { _ = client.Close() }()
	splice(client, backend, br)
}

// tunnelPrefix marks a WebSocket subprotocol that carries SPDY.
const tunnelPrefix = "SPDY/3.1+"

// upgradeToKubelet sends a SPDY upgrade request for the port-forward
// protocols to target and reads the kubelet's 101 answer.
func upgradeToKubelet(target *url.URL, protocols []string) (net.Conn, *bufio.Reader, *http.Response, error) {
	conn, err := net.DialTimeout("tcp", target.Host, 10*time.Second)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("dial kubelet: %w", err)
	}
	req, err := http.NewRequest(http.MethodPost, target.String(), nil)
	if err != nil {
		_ = conn.Close()
		return nil, nil, nil, fmt.Errorf("kubelet request: %w", err)
	}
	req.Header.Set(httpstream.HeaderConnection, httpstream.HeaderUpgrade)
	req.Header.Set(httpstream.HeaderUpgrade, "SPDY/3.1")
	for _, p := range protocols {
		req.Header.Add(httpstream.HeaderProtocolVersion, p)
	}
	if err := req.Write(conn); err != nil {
		_ = conn.Close()
		return nil, nil, nil, fmt.Errorf("write kubelet request: %w", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		_ = conn.Close()
		return nil, nil, nil, fmt.Errorf("read kubelet answer: %w", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		_ = conn.Close()
		return nil, nil, nil, fmt.Errorf("kubelet refused the upgrade: %s", resp.Status)
	}
	return conn, br, resp, nil
}

// splice copies between the client and the kubelet until either side is
// done; br holds what was read from the kubelet past its answer.
func splice(client net.Conn, backend net.Conn, br *bufio.Reader) {
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(backend, client)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, br)
		done <- struct{}{}
	}()
	<-done
}

// serveKubelet is the kubelet's /portForward/{namespace}/{pod} endpoint.
func (s *Server) serveKubelet(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/portForward/"), "/")
	if len(parts) != 2 {
		http.NotFound(w, r)
		return
	}
	f := forwarder{server: s, namespace: parts[0]}
	portforward.ServePortForward(w, r, f, parts[1], types.UID(parts[1]), nil,
		time.Minute, 10*time.Second, portforward.SupportedProtocols)
}

// forwarder is the kubelet's PortForwarder: it copies one stream to and
// from a connection dialled for the pod.
type forwarder struct {
	server    *Server
	namespace string
}

// PortForward dials the pod's port and copies both ways until either side
// is done.
func (f forwarder) PortForward(ctx context.Context, pod string, _ types.UID, port int32, stream io.ReadWriteCloser) error {
	f.server.mu.Lock()
	f.server.streams++
	f.server.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := f.server.opts.Dial(ctx, f.namespace, pod, port)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(conn, stream)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(stream, conn)
		done <- struct{}{}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}
