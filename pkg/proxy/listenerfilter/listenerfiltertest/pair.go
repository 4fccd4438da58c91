// Package listenerfiltertest helps the listener filters' tests.
package listenerfiltertest

import (
	"net"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
)

// Pair connects a loopback client to a listener and returns the client
// and the accepted side wrapped for the listener filters, whose reads
// fail after deadline. Both close when the test ends.
func Pair(t testing.TB, deadline time.Duration) (net.Conn, *listenerfilter.Socket) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	_ = s.SetReadDeadline(time.Now().Add(deadline))
	return c, listenerfilter.NewSocket(s)
}
