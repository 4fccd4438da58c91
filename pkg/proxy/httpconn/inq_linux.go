//go:build linux

package httpconn

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inqReader reads a TCP socket with recvmsg and TCP_INQ, which adds to
// each read how many bytes the socket still holds, and 1 when it holds
// none but the peer's end of the stream (the kernel's "keep reading"
// hint). A read that leaves nothing behind tells the connection that the
// socket is empty and has not ended: from then on, whatever arrives
// makes a new readiness edge, so the connection may wait without reading
// first (see inline.go). The message header and its control buffer are
// the connection's, so a read allocates nothing.
type inqReader struct {
	hdr unix.Msghdr
	iov unix.Iovec
	// cmsg holds one control message with an int32, 8-byte aligned.
	cmsg [3]uint64
}

// enableInq asks the socket for TCP_INQ; it fails on anything but TCP.
func enableInq(raw syscall.RawConn) bool {
	var err error
	if cerr := raw.Control(func(fd uintptr) {
		err = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_INQ, 1)
	}); cerr != nil {
		return false
	}
	return err == nil
}

// read reads from a non-blocking socket with TCP_INQ into p; wouldBlock
// reports that nothing was there; rest whether the socket may still hold
// something (bytes, or its end), true when the kernel did not say.
func (r *inqReader) read(fd uintptr, p []byte) (n int, wouldBlock, rest bool, err error) {
	if len(p) == 0 {
		return 0, false, true, nil
	}
	r.iov.Base = &p[0]
	r.iov.SetLen(len(p))
	r.hdr.Iov = &r.iov
	r.hdr.SetIovlen(1)
	r.hdr.Control = (*byte)(unsafe.Pointer(&r.cmsg[0]))
	r.hdr.SetControllen(int(unsafe.Sizeof(r.cmsg)))
	for {
		// A raw call: the socket is non-blocking, and a call that
		// enters the scheduler wakes its monitor thread (see sockio).
		got, _, errno := unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.hdr)), 0)
		if errno == unix.EINTR {
			continue
		}
		n = int(got)
		if errno != 0 {
			err = errno
		}
		break
	}
	// Drop the pointer to p: the reader outlives the read.
	r.iov.Base = nil
	switch {
	case err == unix.EAGAIN:
		return 0, true, false, nil
	case err != nil:
		return 0, false, true, err
	case n == 0:
		return 0, false, true, nil
	}
	return n, false, r.inq() != 0, nil
}

// inq is the TCP_CM_INQ the last read carried, -1 when it carried none.
func (r *inqReader) inq() int32 {
	if r.hdr.Controllen < unix.SizeofCmsghdr+4 || r.hdr.Flags&unix.MSG_CTRUNC != 0 {
		return -1
	}
	h := (*unix.Cmsghdr)(unsafe.Pointer(&r.cmsg[0]))
	if h.Level != unix.SOL_TCP || h.Type != unix.TCP_CM_INQ || h.Len < unix.SizeofCmsghdr+4 {
		return -1
	}
	return *(*int32)(unsafe.Pointer(uintptr(unsafe.Pointer(&r.cmsg[0])) + unix.SizeofCmsghdr))
}
