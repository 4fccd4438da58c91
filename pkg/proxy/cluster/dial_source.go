package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/outrigger-dev/outrigger/pkg/proxy/sockopt"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// sourceOptionError marks a failure of the original source socket options
// in a dial's error.
type sourceOptionError struct{ err error }

func (e *sourceOptionError) Error() string { return e.err.Error() }
func (e *sourceOptionError) Unwrap() error { return e.err }

// dialFrom dials address with d bound to src's address (port 0) with
// IP_TRANSPARENT and, when src.Mark is not 0, SO_MARK, after the
// cluster's own socket options, as Envoy applies the original_src
// options; src's address replaces upstream_bind_config's. A failure to set
// the options or to bind is an *upstream.LocalConnectError.
func dialFrom(ctx context.Context, d net.Dialer, address string, src upstream.Source) (net.Conn, error) {
	base := d.Control
	d.LocalAddr = &net.TCPAddr{IP: src.Addr.AsSlice(), Zone: src.Addr.Zone()}
	d.Control = func(network, addr string, c syscall.RawConn) error {
		if base != nil {
			if err := base(network, addr, c); err != nil {
				return err
			}
		}
		opts, err := sourceOptions(src, network == "tcp6")
		if err == nil {
			err = opts.Control(network, addr, c)
		}
		if err != nil {
			return &sourceOptionError{err: err}
		}
		return nil
	}
	conn, err := d.DialContext(ctx, "tcp", address)
	if err == nil {
		return conn, nil
	}
	var oe *sourceOptionError
	if errors.As(err, &oe) {
		return nil, &upstream.LocalConnectError{Err: oe.err}
	}
	return nil, bindError(err, d.LocalAddr.(*net.TCPAddr))
}

// bindError turns a dial's failure to bind local into an
// *upstream.LocalConnectError with Envoy's reason; other errors are
// returned as they are.
func bindError(err error, local *net.TCPAddr) error {
	var se *os.SyscallError
	if !errors.As(err, &se) || se.Syscall != "bind" {
		return err
	}
	ap := local.AddrPort()
	return &upstream.LocalConnectError{
		Bind:   true,
		Reason: fmt.Sprintf("failed to bind to %s: %s", netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), errorDetails(se.Err)),
		Err:    se.Err,
	}
}

// sourceOptions are the socket options of an original source connection:
// IP_TRANSPARENT (IPV6_TRANSPARENT on an IPv6 socket), and SO_MARK unless
// the mark is 0.
func sourceOptions(src upstream.Source, ipv6 bool) (sockopt.Set, error) {
	t, err := sockopt.Transparent(ipv6)
	if err != nil {
		return nil, err
	}
	if src.Mark == 0 {
		return sockopt.Set{t}, nil
	}
	m, err := sockopt.Mark(src.Mark)
	if err != nil {
		return nil, err
	}
	// Envoy sets the mark before the transparent option.
	return sockopt.Set{m, t}, nil
}

// errorDetails is the system's message for err as Envoy prints it
// (strerror's, capitalised).
func errorDetails(err error) string {
	s := err.Error()
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}
