package udpproxy

import (
	"context"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// queuedTunnel is a tunnel of cfg whose stream has not opened.
func queuedTunnel(cfg *tunnelConfig) (*tunnel, *clusterStats) {
	cs := newClusterStats(stats.NewStore(), "c")
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{cs: cs}
	return &tunnel{s: s, cfg: cfg, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1)}, cs
}

func TestTunnelSendBeforeOpen(t *testing.T) {
	t.Run("without buffer_options datagrams are dropped, uncounted", func(t *testing.T) {
		tun, cs := queuedTunnel(&tunnelConfig{maxDatagrams: 1024, maxBytes: 16384})
		tun.send([]byte("a"))
		if len(tun.queue) != 0 || cs.tunnelBufferOverflow.Value() != 0 {
			t.Errorf("queue %d, overflow %d", len(tun.queue), cs.tunnelBufferOverflow.Value())
		}
	})
	t.Run("buffer_options bound the datagrams", func(t *testing.T) {
		tun, cs := queuedTunnel(&tunnelConfig{buffer: true, maxDatagrams: 2, maxBytes: 16384})
		b := []byte("one")
		tun.send(b)
		b[0] = 'X' // the queue keeps its own copy
		tun.send([]byte("two"))
		tun.send([]byte("three"))
		if len(tun.queue) != 2 || string(tun.queue[0]) != "one" || string(tun.queue[1]) != "two" {
			t.Errorf("queue %q", tun.queue)
		}
		if got := cs.tunnelBufferOverflow.Value(); got != 1 {
			t.Errorf("overflow %d, want 1", got)
		}
	})
	t.Run("buffer_options bound the bytes", func(t *testing.T) {
		tun, cs := queuedTunnel(&tunnelConfig{buffer: true, maxDatagrams: 10, maxBytes: 5})
		tun.send([]byte("abc"))
		tun.send([]byte("def"))
		tun.send([]byte("gh"))
		if len(tun.queue) != 2 || tun.queued != 5 {
			t.Errorf("queue %q (%d bytes)", tun.queue, tun.queued)
		}
		if got := cs.tunnelBufferOverflow.Value(); got != 1 {
			t.Errorf("overflow %d, want 1", got)
		}
	})
	t.Run("an open tunnel queues within its window without buffer_options", func(t *testing.T) {
		tun, cs := queuedTunnel(&tunnelConfig{maxDatagrams: 1, maxBytes: 1})
		tun.st = &upstream.H2Stream{}
		tun.send([]byte("abc"))
		tun.send([]byte("def"))
		if len(tun.queue) != 2 || cs.tunnelBufferOverflow.Value() != 0 {
			t.Errorf("queue %q, overflow %d", tun.queue, cs.tunnelBufferOverflow.Value())
		}
		select {
		case <-tun.wake:
		default:
			t.Error("the writer was not woken")
		}
	})
}
