package listenerfilter

import (
	"errors"
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// peekSocket is Peek on a socket: MSG_PEEK on its receive queue.
func (s *Socket) peekSocket(buf []byte, want int) (int, error) {
	want = min(max(want, 1), len(buf))
	sc, ok := s.conn.(syscall.Conn)
	if !ok {
		return 0, &ReadError{Err: errors.ErrUnsupported}
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, readError(err)
	}
	var (
		n       int
		peekErr error
	)
	err = raw.Read(func(fd uintptr) bool {
		for {
			n, _, peekErr = unix.Recvfrom(int(fd), buf, unix.MSG_PEEK|unix.MSG_DONTWAIT)
			if !errors.Is(peekErr, unix.EINTR) {
				break
			}
		}
		switch {
		case errors.Is(peekErr, unix.EAGAIN):
			return false // nothing yet: wait for the socket to be readable
		case peekErr != nil:
			return true
		case n == 0:
			peekErr = io.EOF
			return true
		case n < want && peerClosed(int(fd)):
			// What the peer sent before its close is all there will be.
			peekErr = io.EOF
			return true
		case n < want:
			return false // wait for more
		}
		return true
	})
	if err == nil {
		err = peekErr
	}
	if err != nil {
		return 0, readError(err)
	}
	return n, nil
}

// peerClosed reports whether the peer has sent its FIN: the bytes
// waiting are then the last ones, and no readiness event will come for
// more.
func peerClosed(fd int) bool {
	info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	return err == nil && info.State == tcpCloseWait
}

// tcpCloseWait is TCP_CLOSE_WAIT, the state of a socket whose peer has
// closed its side.
const tcpCloseWait = 8
