package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listener"
	"github.com/outrigger-dev/outrigger/pkg/proxy/sockopt"
)

// listenAdmin binds the admin interface's address: a socket address, or
// a pipe (a unix domain socket), as Contour's bootstrap puts it. It
// returns the listener and the address as it is logged and written to
// --admin-address-path.
func listenAdmin(a *corev3.Address, so sockopt.Set) (net.Listener, string, error) {
	ln, addr, err := bindAdmin(a, so)
	if err != nil {
		return nil, "", err
	}
	if err := so.ApplyListening(ln); err != nil {
		_ = ln.Close()
		return nil, "", fmt.Errorf("admin.socket_options: %w", err)
	}
	return ln, addr, nil
}

// bindAdmin binds the admin address, with the socket options due before
// bind set.
func bindAdmin(a *corev3.Address, so sockopt.Set) (net.Listener, string, error) {
	if p := a.GetPipe(); p != nil {
		ln, err := listenPipe(p, so)
		if err != nil {
			return nil, "", fmt.Errorf("cannot bind the admin address %s: %w", p.GetPath(), err)
		}
		return ln, p.GetPath(), nil
	}
	sa := a.GetSocketAddress()
	// Plain TCP, as Envoy's admin listens (Go's default is MPTCP).
	lc := net.ListenConfig{Control: so.Control}
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(context.Background(), "tcp", listener.AddressString(sa))
	if err != nil {
		return nil, "", fmt.Errorf("cannot bind the admin address %s: %w", listener.AddressString(sa), err)
	}
	return ln, ln.Addr().String(), nil
}

// listenPipe binds a pipe as Envoy does: a file left at the path (by a
// process that did not remove its socket) is removed first, and a mode
// other than 0 is set on the new socket file. A name starting with "@"
// is in Linux's abstract namespace, which has no file and so no mode.
func listenPipe(p *corev3.Pipe, so sockopt.Set) (net.Listener, error) {
	path := p.GetPath()
	abstract := strings.HasPrefix(path, "@")
	switch {
	case path == "":
		return nil, errors.New("pipe.path: required")
	case abstract && p.GetMode() != 0:
		return nil, errors.New("pipe.mode: cannot be set on an abstract socket (@name)")
	}
	if !abstract {
		// As Envoy: a path that cannot be removed is left for bind to
		// report.
		_ = os.Remove(path)
	}
	lc := net.ListenConfig{Control: so.Control}
	ln, err := lc.Listen(context.Background(), "unix", path)
	if err != nil {
		return nil, err
	}
	if !abstract && p.GetMode() != 0 {
		if err := os.Chmod(path, fs.FileMode(p.GetMode())); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("setting the mode of %s: %w", path, err)
		}
	}
	return ln, nil
}
