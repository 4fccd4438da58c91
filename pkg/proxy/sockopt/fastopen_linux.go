package sockopt

import "golang.org/x/sys/unix"

// TCPFastOpen is the option a listener's tcp_fast_open_queue_length sets
// on its listening sockets, as Envoy's addTcpFastOpenOptions does:
// TCP_FASTOPEN with the queue's length (0 turns Fast Open off), once the
// socket listens.
func TCPFastOpen(queueLength uint32) (Option, error) {
	return Option{Level: unix.IPPROTO_TCP, Name: unix.TCP_FASTOPEN, Int: int(queueLength), Listening: true}, nil
}
