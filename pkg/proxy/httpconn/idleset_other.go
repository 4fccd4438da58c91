//go:build !linux

package httpconn

import "time"

// idleSetSupported: idle connections keep their goroutines on this
// platform.
const idleSetSupported = false

// idleSet holds nothing on this platform.
type idleSet struct{}

// add never takes a connection here.
func (*idleSet) add(*serverConn, time.Time) bool { return false }

// take finds nothing here.
func (*idleSet) take(*serverConn) bool { return false }
