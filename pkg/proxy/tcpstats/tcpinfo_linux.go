package tcpstats

import (
	"net"

	"golang.org/x/sys/unix"
)

// tcpInfoSupported reports whether TCP_INFO can be read: on Linux.
func tcpInfoSupported() error { return nil }

// readTCPInfo reads conn's TCP_INFO; false when it cannot.
func readTCPInfo(conn net.Conn) (tcpInfo, bool) {
	tcp, ok := conn.(*net.TCPConn)
	if !ok {
		return tcpInfo{}, false
	}
	rc, err := tcp.SyscallConn()
	if err != nil {
		return tcpInfo{}, false
	}
	var (
		ti   *unix.TCPInfo
		gerr error
	)
	if err := rc.Control(func(fd uintptr) { ti, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || gerr != nil {
		return tcpInfo{}, false
	}
	return tcpInfo{
		segsOut: ti.Segs_out, segsIn: ti.Segs_in, dataSegsOut: ti.Data_segs_out, dataSegsIn: ti.Data_segs_in,
		totalRetrans: ti.Total_retrans, bytesReceived: ti.Bytes_received, bytesSent: ti.Bytes_sent,
		notsentBytes: ti.Notsent_bytes, unacked: ti.Unacked, rtt: ti.Rtt, rttVar: ti.Rttvar,
	}, true
}
