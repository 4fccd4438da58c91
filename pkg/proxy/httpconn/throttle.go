package httpconn

import (
	"errors"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Metered response bodies. An encoder that is an httpfilter.Throttle (the
// fault filter's response rate limit) lets the bytes that reach it leave
// in slices, with waits in between; the encoders after it see each slice.
// The wait runs on the stream's goroutine, which is also the one that
// reads the upstream: while it waits, the upstream is not read, its
// socket buffers (or HTTP/2 window) fill and it stops sending, so the
// throttled body holds no more memory than the piece being metered, as
// Envoy's watermarks pause the upstream under its StreamRateLimiter.

// errPaceCut is a metered write whose wait was cut short: the client went
// away or reset the stream, the manager shut down, or the stream's
// maximum duration passed (downstreamFailed tells them apart).
var errPaceCut = errors.New("throttled response: the wait was cut short")

// minPause is the shortest wait between two slices, whatever a throttle
// that grants nothing asks for, so that a wait of 0 cannot spin.
const minPause = time.Millisecond

// writeMetered is writeBody when an encoder meters the body: the stream
// counts p as sent once it returns; the bytes that left were counted as
// they left.
func (d *encodingDown) writeMetered(p []byte) error {
	if err := d.flow(0, p, false); err != nil {
		return err
	}
	d.s.bytesSent -= uint64(len(p))
	return nil
}

// finishMetered is finish's part when an encoder meters the body: the
// encoders' ends, metered as the body was, then the head if it is still
// held and the trailers the encoders leave.
func (d *encodingDown) finishMetered() error {
	sent := d.s.bytesSent
	if err := d.flow(0, nil, true); err != nil {
		return err
	}
	n := int64(d.s.bytesSent - sent)
	if len(d.trailer) > 0 {
		n = -1
	}
	if err := d.release(n); err != nil {
		return err
	}
	if len(d.trailer) > 0 {
		d.inner.trailers(d.trailer)
	}
	return nil
}

// flow passes p through the encoders from i on and writes what comes
// out; at a throttle, it meters what reached it, each slice going on
// through the encoders after it. With end, the encoders' ends follow.
func (d *encodingDown) flow(i int, p []byte, end bool) error {
	j := i
	for j < len(d.encs) {
		if _, ok := d.encs[j].(httpfilter.Throttle); ok {
			break
		}
		j++
	}
	p, err := d.runRange(i, j, p, end)
	if err != nil {
		return err
	}
	if j == len(d.encs) {
		return d.emit(p)
	}
	t := d.encs[j].(httpfilter.Throttle)
	for len(p) > 0 {
		k, wait := t.Take(len(p), time.Now())
		k = min(max(k, 0), len(p))
		if k > 0 {
			if err := d.flow(j+1, p[:k], false); err != nil {
				return err
			}
			p = p[k:]
		}
		if len(p) == 0 {
			break
		}
		if k == 0 {
			wait = max(wait, minPause)
		}
		if err := d.pause(wait); err != nil {
			return err
		}
	}
	if !end {
		return nil
	}
	// A throttle only reads the body: its end adds no byte, but may
	// change the trailers like any encoder's.
	if _, d.trailer, err = t.EncodeEnd(d.trailer); err != nil {
		return err
	}
	return d.flow(j+1, nil, true)
}

// emit writes what left the encoders, releasing a held head first.
func (d *encodingDown) emit(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if err := d.release(-1); err != nil {
		return err
	}
	if err := d.writeInner(p); err != nil {
		return err
	}
	d.s.bytesSent += uint64(len(p))
	d.inner.touch(time.Now())
	return nil
}

// pause lets what was written leave, then waits wait before the next
// slice.
func (d *encodingDown) pause(wait time.Duration) error {
	if err := d.flush(); err != nil {
		return err
	}
	if !d.s.pace(wait) {
		return errPaceCut
	}
	return nil
}

// pace waits d between two slices of a metered response. It reports
// false when the client reset the stream or went away, the manager shut
// down, or the stream's maximum duration passed first: the write fails
// then, as a write to a slow client would.
func (s *stream) pace(d time.Duration) bool {
	end := time.Now().Add(d)
	// cut: the maximum duration passes during the wait; the failed
	// write reports it (downstreamFailed).
	cut := false
	if limit := s.writeLimit(); !limit.IsZero() && limit.Before(end) {
		end, cut = limit, true
	}
	w := s.wakeChan()
	for {
		if s.peerReset.Load() || s.down.gone() {
			return false
		}
		left := time.Until(end)
		if left <= 0 {
			return !cut
		}
		timer := time.NewTimer(min(left, gonePollInterval))
		select {
		case <-timer.C:
		case <-*w:
			timer.Stop()
			return false
		case <-s.m.ctx.Done():
			timer.Stop()
			return false
		}
	}
}
