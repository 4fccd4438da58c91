package listenerfilter

// Peeker is a connection that peeks by itself rather than through a
// socket: the in-memory connections of internal listeners
// (userspace.Conn). Its Peek has Socket.Peek's contract.
type Peeker interface {
	Peek(buf []byte, want int) (int, error)
}

// Peek copies the bytes waiting to be read into buf without reading them,
// waiting until at least want of them are there (or buf is full). It
// returns how many it copied, which may be more than want. Its errors:
// io.EOF when the peer closed before want bytes came,
// os.ErrDeadlineExceeded at the listener filters' timeout, a *ReadError
// otherwise.
func (s *Socket) Peek(buf []byte, want int) (int, error) {
	p, ok := s.conn.(Peeker)
	if !ok {
		return s.peekSocket(buf, want)
	}
	n, err := p.Peek(buf, want)
	if err != nil {
		return 0, readError(err)
	}
	return n, nil
}
