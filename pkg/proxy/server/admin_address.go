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
)

// listenAdmin binds the admin interface's address: a socket address, or
// a pipe (a unix domain socket), as Contour's bootstrap puts it. It
// returns the listener and the address as it is logged and written to
// --admin-address-path.
func listenAdmin(a *corev3.Address) (net.Listener, string, error) {
	if p := a.GetPipe(); p != nil {
		ln, err := listenPipe(p)
		if err != nil {
			return nil, "", fmt.Errorf("cannot bind the admin address %s: %w", p.GetPath(), err)
		}
		return ln, p.GetPath(), nil
	}
	sa := a.GetSocketAddress()
	// Plain TCP, as Envoy's admin listens (Go's default is MPTCP).
	var lc net.ListenConfig
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
func listenPipe(p *corev3.Pipe) (net.Listener, error) {
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
	ln, err := net.Listen("unix", path)
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
