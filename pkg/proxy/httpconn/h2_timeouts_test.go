package httpconn

import (
	"io"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"golang.org/x/net/http2"
)

// TestH2IdleTimeoutOnTime checks the idle timeout of HTTP/2 connections:
// counted from the accept for a client that never sends the preface, and
// from the end of the last stream otherwise; the GOAWAY comes at the
// setting, never early.
func TestH2IdleTimeoutOnTime(t *testing.T) {
	const idle = time.Second
	p := directProxy(t, func(c *hcmv3.HttpConnectionManager) {
		c.CodecType = hcmv3.HttpConnectionManager_HTTP2
		c.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{IdleTimeout: ms(int(idle / time.Millisecond))}
	})
	t.Run("no preface", func(t *testing.T) {
		start := time.Now()
		nc := dialH2Raw(t, p.addr)
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.Copy(io.Discard, nc)
		firedOnTime(t, "the close of a silent connection", time.Since(start), idle, 0)
	})
	t.Run("after a stream", func(t *testing.T) {
		c := dialH2(t, p.addr)
		// Busy for a while first: the timeout counts from the last
		// stream's end.
		for range 5 {
			c.wantOK(c.get("/d"), "hi")
			time.Sleep(300 * time.Millisecond)
		}
		start := time.Now()
		c.wantOK(c.get("/d"), "hi")
		c.wantGoAway(http2.ErrCodeNo)
		firedOnTime(t, "the idle GOAWAY", time.Since(start), idle, 0)
	})
	p.waitCounter(t, "http.test.downstream_cx_idle_timeout", 2)
}

// TestH2DelayedClose checks delayed_close_timeout on HTTP/2: after its
// GOAWAY the proxy closes its write side and waits that long for the client
// to close, counting downstream_cx_delayed_close_timeout when it does not;
// 0 closes at once.
func TestH2DelayedClose(t *testing.T) {
	tests := map[string]struct {
		delay time.Duration
		stat  uint64
	}{
		"the client never closes": {delay: 600 * time.Millisecond, stat: 1},
		"delayed close disabled":  {delay: 0, stat: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := directProxy(t, func(c *hcmv3.HttpConnectionManager) {
				c.CodecType = hcmv3.HttpConnectionManager_HTTP2
				c.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{IdleTimeout: ms(300)}
				c.DelayedCloseTimeout = ms(int(tc.delay / time.Millisecond))
				// One GOAWAY, at the idle timeout.
				c.DrainTimeout = ms(0)
			})
			c := dialH2(t, p.addr)
			c.wantOK(c.get("/d"), "hi")
			c.wantGoAway(http2.ErrCodeNo)
			// The proxy's write side is closed: EOF comes at once.
			start := time.Now()
			_ = c.waitClosed()
			if d := time.Since(start); d > lateBy {
				t.Errorf("the write side closed %v after the GOAWAY", d)
			}
			// Its read side stays open for the delay: a write still
			// goes through until the proxy closes, then fails.
			eventually(t, "the proxy closing its side", func() bool {
				_, err := c.nc.Write([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0})
				return err != nil
			})
			firedOnTime(t, "the delayed close", time.Since(start), tc.delay, clientLag)
			p.waitCounter(t, "http.test.downstream_cx_delayed_close_timeout", tc.stat)
		})
	}
}

// TestH2DrainTimeout checks Envoy's drain sequence on an HTTP/2 connection
// that idled out: a first GOAWAY that refuses nothing (last stream
// 2^31-1), a request opened during drain_timeout still served, then the
// final GOAWAY naming that request's stream, and the close.
func TestH2DrainTimeout(t *testing.T) {
	const idle, drain = 300 * time.Millisecond, 600 * time.Millisecond
	p := directProxy(t, func(c *hcmv3.HttpConnectionManager) {
		c.CodecType = hcmv3.HttpConnectionManager_HTTP2
		c.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{IdleTimeout: ms(int(idle / time.Millisecond))}
		c.DrainTimeout = ms(int(drain / time.Millisecond))
	})
	c := dialH2(t, p.addr)
	// The idle timer starts when the proxy ends the stream, which can be
	// well before this client has read the response on a loaded machine:
	// measure from before the request so the bound cannot be undercut.
	start := time.Now()
	c.wantOK(c.get("/d"), "hi")
	first := c.wantGoAway(http2.ErrCodeNo)
	firedOnTime(t, "the first GOAWAY", time.Since(start), idle, 0)
	if first.lastStreamID != 1<<31-1 {
		t.Errorf("the first GOAWAY names stream %d, want 2^31-1", first.lastStreamID)
	}
	id := c.get("/d")
	c.wantOK(id, "hi")
	c.until("the final GOAWAY", func() bool { return len(c.goAways) == 2 })
	firedOnTime(t, "the final GOAWAY", time.Since(start), idle+drain, 0)
	if last := c.goAways[1]; last.lastStreamID != id || last.code != http2.ErrCodeNo {
		t.Errorf("the final GOAWAY names stream %d (%v), want %d (NO_ERROR)", last.lastStreamID, last.code, id)
	}
	_ = c.waitClosed()
	p.waitCounter(t, "http.test.downstream_cx_idle_timeout", 1)
	p.waitCounter(t, "http2.goaway_sent", 2)
}
