// Package sockopt applies Envoy's socket options (config.core.v3
// SocketOption) to the sockets of listeners and upstream connections: a
// raw setsockopt of a level, a name and an integer or bytes value, at the
// socket state the option names.
//
// Go's socket calls leave one hook before bind (a net.ListenConfig's or
// net.Dialer's Control) and the socket itself once listening, so the
// options of STATE_PREBIND and STATE_BOUND are set before bind (a bound,
// unconnected socket takes the same options either side of bind) and those
// of STATE_LISTENING once the socket listens, as Envoy sets them.
package sockopt

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// Option is one compiled socket option.
type Option struct {
	Level, Name int
	// Int is the value unless Bytes is set.
	Int   int
	Bytes []byte
	// Listening: set once the socket listens, rather than before bind.
	Listening bool
}

// Set is the options of one socket, in configuration order.
type Set []Option

// Compile checks a socket_options list for stream sockets; options for
// datagram sockets only are left out, as Envoy applies an option to the
// sockets of its type only. Errors name the field below the list
// ("[1].int_value: ...").
func Compile(opts []*corev3.SocketOption) (Set, error) {
	var (
		s    Set
		errs []error
	)
	for i, o := range opts {
		if t := o.GetType(); t != nil && t.GetStream() == nil && t.GetDatagram() != nil {
			continue
		}
		opt := Option{Level: int(o.GetLevel()), Name: int(o.GetName())}
		if int64(opt.Level) != o.GetLevel() || int64(opt.Name) != o.GetName() {
			errs = append(errs, fmt.Errorf("[%d]: level and name must fit in an int", i))
			continue
		}
		switch v := o.GetValue().(type) {
		case *corev3.SocketOption_IntValue:
			if int64(int32(v.IntValue)) != v.IntValue {
				errs = append(errs, fmt.Errorf("[%d].int_value: %d does not fit in a C int", i, v.IntValue))
				continue
			}
			opt.Int = int(v.IntValue)
		case *corev3.SocketOption_BufValue:
			opt.Bytes = v.BufValue
		default:
			errs = append(errs, fmt.Errorf("[%d]: one of int_value or buf_value is required", i))
			continue
		}
		opt.Listening = o.GetState() == corev3.SocketOption_STATE_LISTENING
		s = append(s, opt)
	}
	return s, errors.Join(errs...)
}

// Control sets the options due before bind on c; it fits a
// net.ListenConfig's or net.Dialer's Control.
func (s Set) Control(_, _ string, c syscall.RawConn) error {
	return s.apply(c, false)
}

// ApplyListening sets the STATE_LISTENING options on a listening socket.
func (s Set) ApplyListening(ln net.Listener) error {
	if !s.hasListening() {
		return nil
	}
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return fmt.Errorf("socket options: %T has no file descriptor", ln)
	}
	c, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	return s.apply(c, true)
}

// hasListening reports whether an option waits for the listening state.
func (s Set) hasListening() bool {
	for _, o := range s {
		if o.Listening {
			return true
		}
	}
	return false
}

// apply sets the options of one state (listening or not) on c.
func (s Set) apply(c syscall.RawConn, listening bool) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		for _, o := range s {
			if o.Listening != listening {
				continue
			}
			if serr = setsockopt(fd, o); serr != nil {
				serr = fmt.Errorf("setsockopt(level %d, name %d): %w", o.Level, o.Name, serr)
				return
			}
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// Chain runs several Control functions in turn, for a socket that needs
// more than one (SO_REUSEPORT and the configured options).
func Chain(fns ...func(network, address string, c syscall.RawConn) error) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		for _, f := range fns {
			if f == nil {
				continue
			}
			if err := f(network, address, c); err != nil {
				return err
			}
		}
		return nil
	}
}
