//go:build !linux

package tcpstats

import (
	"errors"
	"net"
)

// tcpInfoSupported refuses the tcp_stats transport socket, as Envoy does
// off Linux.
func tcpInfoSupported() error {
	return errors.New("envoy.transport_sockets.tcp_stats is not supported on this platform")
}

// readTCPInfo cannot read TCP_INFO here.
func readTCPInfo(net.Conn) (tcpInfo, bool) { return tcpInfo{}, false }
