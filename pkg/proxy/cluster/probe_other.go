//go:build !unix

package cluster

import "net"

// prober is a no-op where non-blocking peeks are not available: idle
// connections are taken as usable, and a dead one fails its request.
type prober struct{}

func (p *prober) init(net.Conn) {}

func (p *prober) usable() bool { return true }

func (p *prober) peerEnded() bool { return false }
