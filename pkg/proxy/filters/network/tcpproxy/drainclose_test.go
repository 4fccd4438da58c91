package tcpproxy

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

// fakeDrain is a listener drain that says "close" once set.
type fakeDrain struct{ on atomic.Bool }

func (d *fakeDrain) DrainClose() bool { return d.on.Load() }

// TestCheckDrainClose: with check_drain_close, the first bytes that move
// after the listener began draining close the connection (counted in
// downstream_cx_drain_close); without it, or before the drain, the
// connection stays.
func TestCheckDrainClose(t *testing.T) {
	for _, check := range []bool{true, false} {
		cfg := clusterCfg("echo")
		if check {
			cfg.CheckDrainClose = wrapperspb.Bool(true)
		}
		d := &fakeDrain{}
		h := newHarnessFormat(t, cfg, fakeClusters{"echo": {name: "echo", hosts: []string{echoServer(t)}}}, "%RESPONSE_FLAGS%\n",
			func(c *netfilter.Context) { c.Drain = d })
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		echo := func(msg string) (string, error) {
			if _, err := io.WriteString(c, msg); err != nil {
				return "", err
			}
			b := make([]byte, len(msg))
			_, err := io.ReadFull(c, b)
			return string(b), err
		}
		if got, err := echo("a"); got != "a" || err != nil {
			t.Fatalf("check %v: before the drain: %q, %v", check, got, err)
		}
		d.on.Store(true)
		got, err := echo("b")
		if check {
			// The proxy wrote "b" upstream and closed: the echo may or
			// may not make it, the end does.
			if err == nil {
				_, err = c.Read(make([]byte, 1))
			}
			if err == nil {
				t.Errorf("the connection stayed open during the drain")
			}
			waitFor(t, "downstream_cx_drain_close", func() bool { return h.counter("tcp.p.downstream_cx_drain_close") == 1 })
		} else {
			if got != "b" || err != nil {
				t.Errorf("without check_drain_close: %q, %v", got, err)
			}
			if n := h.counter("tcp.p.downstream_cx_drain_close"); n != 0 {
				t.Errorf("downstream_cx_drain_close = %d", n)
			}
		}
		_ = c.Close()
	}
}
