package httpconn

import (
	"syscall"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// A request that leaves in one write (its head, with its body when all of
// it was gathered behind the head) is written upstream and then waited on
// without the read that Go's net package tries before it parks: that read
// is made right after the request left, when the response cannot be there
// yet, so it finds nothing (EAGAIN) on nearly every request of a busy
// proxy, one system call of about four per request. Instead the request is
// written from inside the socket's RawConn.Read, whose function then
// returns false without reading, so that the netpoller waits for the
// socket to be readable, and the response is read once, when it is there.
//
// Why this loses no wake-up. Go's netpoller is edge-triggered: epoll
// reports a socket when something arrives on it (bytes, the peer's FIN or
// reset), and the poller keeps that report as a ready flag until a reader
// takes it. RawConn.Read clears the flag (prepareRead) before it calls its
// function, so an arrival reported before that call would be forgotten,
// and a wait after it would last until the deadline. The request is
// therefore written after the flag is cleared, inside the function: the
// response, and anything else the upstream sends because of the request,
// can only arrive after it, and each arrival reports the socket anew (to
// a waiter, or as the flag its wait finds set). What the wait does not see
// is what arrived before the request was written and was not read:
//   - bytes left from an earlier response: the pool never lends a
//     connection whose read buffer holds any (ReleaseHTTP1), and a short
//     read of a TCP socket took all it held;
//   - what came while the connection was idle in its pool (stray bytes, or
//     the upstream closing): a connection idle for probeWindow or more is
//     probed at its loan, which finds both; within the window, a closed
//     upstream answers the request with a reset, which wakes the wait (the
//     read then sees the end of the stream, as without the wait), and
//     stray bytes come before the response either way, which wakes it.
//     Only an upstream that sends stray bytes while idle and then never
//     answers is answered differently: after the timeout (504) rather
//     than at once (502, the bytes not being a response).
//
// So the wait is used only where the whole request is written inside the
// function and nothing else reads or writes the connection meanwhile: a
// plain TCP upstream (TLS may hold decrypted bytes the socket no longer
// shows), nothing of the request written before (a large or spliced body
// was, and the upstream may have answered early), no Expect: 100-continue
// and no hedging (both read the response under their own timers). The
// timeouts that start once a body is sent start just before that write.
// Everything else, and a wait that fails (a deadline, an interrupt, a
// closed connection), takes the ordinary read, which meets the same error
// or reads what came.
type responseWait struct {
	// fn is raw.Read's function, bound once per scratch space so that a
	// request allocates nothing.
	fn func(fd uintptr) bool
	// out is what fn writes; written tells that fn ran.
	out     *outBuf
	written bool
}

// flushAwaitingResponse writes what u.out gathered (the request) to uc
// and, when it may (see responseWait), returns once uc is readable, the
// response's first bytes there; it returns the write's error.
func (s *stream) flushAwaitingResponse(u *upstreamScratch, uc *upstream.Conn, raw syscall.RawConn) error {
	if raw == nil {
		return u.out.flush()
	}
	w := &u.wait
	if w.fn == nil {
		w.fn = w.writeThenWait
	}
	w.out, w.written = &u.out, false
	if uc.Buffers != nil {
		// The connection waits without a read buffer and takes one
		// (a larger one) once the response is there.
		uc.Buffers.PutReader(uc.R)
		uc.R = nil
	}
	err := raw.Read(w.fn)
	if uc.Buffers != nil {
		uc.R = uc.Buffers.ResponseReader()
	}
	written := w.written
	w.out, w.written = nil, false
	if !written {
		// The wait failed before the function ran (a deadline already
		// past, an interrupt, a closed socket): the ordinary write
		// meets the same.
		return u.out.flush()
	}
	_ = err // a failed wait: the read that follows meets the same error
	return u.out.err
}

// writeThenWait is raw.Read's function: on its first call it writes the
// request and, once it is all out, asks for the wait; on the next (the
// socket is readable) it ends the wait without reading.
func (w *responseWait) writeThenWait(uintptr) bool {
	if w.written {
		return true
	}
	w.written = true
	return w.out.flush() != nil
}

// responseRawConn is uc's socket to wait on before the response, nil when
// this request reads it the ordinary way (see responseWait): the whole
// request must be what u.out gathered, none of it sent yet.
func (s *stream) responseRawConn(u *upstreamScratch, uc *upstream.Conn) syscall.RawConn {
	o := &u.out
	if o.wrote || len(o.b) == 0 || o.err != nil || s.proxiesContinue() || s.retry.hedge || uc.R == nil || uc.R.Buffered() > 0 {
		return nil
	}
	if uc.Raw == nil {
		tcp := plainTCP(uc.Conn)
		if tcp == nil {
			return nil
		}
		raw, err := tcp.SyscallConn()
		if err != nil {
			return nil
		}
		uc.Raw = raw
	}
	return uc.Raw
}
