package connectionlimit

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	clv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/connection_limit/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// terminal keeps the connections it is handed, and records refusals.
type terminal struct {
	mu      sync.Mutex
	got     []net.Conn
	refused []*netfilter.Refusal
}

func (t *terminal) HandleConn(c net.Conn) { t.mu.Lock(); t.got = append(t.got, c); t.mu.Unlock() }
func (t *terminal) Refused(_ net.Conn, r *netfilter.Refusal) {
	t.mu.Lock()
	t.refused = append(t.refused, r)
	t.mu.Unlock()
}
func (t *terminal) Close() error                   { return nil }
func (t *terminal) Shutdown(context.Context) error { return nil }

// flags is a runtime of fixed boolean values.
type flags map[string]bool

func (f flags) Bool(key string, def bool) bool {
	if v, ok := f[key]; ok {
		return v
	}
	return def
}

// chain compiles cfg in front of a terminal filter.
func chain(t *testing.T, cfg *clv3.ConnectionLimit, rt flags) (*netfilter.Chain, *terminal, *stats.Store) {
	t.Helper()
	store := stats.NewStore()
	ctx := netfilter.Context{Stats: store}
	if rt != nil {
		ctx.Runtime = rt
	}
	f, err := Factory{}.Compile(cfg, ctx)
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{}
	ch, err := netfilter.NewChain([]netfilter.Filter{f, term})
	if err != nil {
		t.Fatal(err)
	}
	return ch, term, store
}

// pipe returns the server side of a new connection, and its client side,
// closed when the test ends.
func pipe(t *testing.T) (server, client net.Conn) {
	server, client = net.Pipe()
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return server, client
}

// open runs n new connections through ch.
func open(t *testing.T, ch *netfilter.Chain, n int) {
	t.Helper()
	for range n {
		c, _ := pipe(t)
		ch.HandleConn(c)
	}
}

func limit(max uint64, delay time.Duration) *clv3.ConnectionLimit {
	c := &clv3.ConnectionLimit{StatPrefix: "front", MaxConnections: wrapperspb.UInt64(max)}
	if delay > 0 {
		c.Delay = durationpb.New(delay)
	}
	return c
}

func gauge(s *stats.Store) int64 { return s.Gauge("connection_limit.front.active_connections").Value() }

func limited(s *stats.Store) uint64 {
	return s.Counter("connection_limit.front.limited_connections").Value()
}

func TestLimit(t *testing.T) {
	ch, term, store := chain(t, limit(2, 0), nil)
	open(t, ch, 3)
	if len(term.got) != 2 || len(term.refused) != 1 {
		t.Fatalf("%d connections served, %d refused; want 2 and 1", len(term.got), len(term.refused))
	}
	if r := term.refused[0]; r.Reason != "over_connection_limit" || r.Flags != 0 {
		t.Errorf("refusal %+v, want Envoy's close reason and no flag", r)
	}
	if gauge(store) != 2 || limited(store) != 1 {
		t.Errorf("active_connections %d, limited_connections %d; want 2 and 1", gauge(store), limited(store))
	}
	// One closes: a place frees up, for one more.
	_ = term.got[0].Close()
	_ = term.got[0].Close() // counted once
	if gauge(store) != 1 {
		t.Errorf("active_connections %d after a close, want 1", gauge(store))
	}
	open(t, ch, 2)
	if len(term.got) != 3 || len(term.refused) != 2 {
		t.Fatalf("%d connections served, %d refused; want 3 and 2", len(term.got), len(term.refused))
	}
	for _, c := range term.got {
		_ = c.Close()
	}
	if gauge(store) != 0 || limited(store) != 2 {
		t.Errorf("active_connections %d, limited_connections %d; want 0 and 2", gauge(store), limited(store))
	}
}

// TestLimitConcurrent opens connections from many goroutines at once:
// exactly max_connections of them get through.
func TestLimitConcurrent(t *testing.T) {
	ch, term, store := chain(t, limit(10, 0), nil)
	var wg sync.WaitGroup
	for range 50 {
		c, _ := pipe(t)
		wg.Go(func() { ch.HandleConn(c) })
	}
	wg.Wait()
	if len(term.got) != 10 || limited(store) != 40 || gauge(store) != 10 {
		t.Errorf("%d served, limited_connections %d, active_connections %d; want 10, 40, 10", len(term.got), limited(store), gauge(store))
	}
}

func TestDelay(t *testing.T) {
	const delay = 150 * time.Millisecond
	ch, term, store := chain(t, limit(1, delay), nil)
	first, _ := pipe(t)
	ch.HandleConn(first)

	// Over the limit: held for the delay, what it sends read and dropped,
	// then closed; counted while held.
	c, client := pipe(t)
	go func() { _, _ = client.Write([]byte("dropped")) }()
	start := time.Now()
	done := make(chan struct{})
	go func() { ch.HandleConn(c); close(done) }()
	time.Sleep(delay / 3)
	if gauge(store) != 2 {
		t.Errorf("active_connections %d while one is held, want 2", gauge(store))
	}
	<-done
	if d := time.Since(start); d < delay {
		t.Errorf("closed after %v, before the delay of %v", d, delay)
	}
	if _, err := client.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("client read %v, want EOF: the connection closed", err)
	}
	if len(term.got) != 1 || len(term.refused) != 1 || gauge(store) != 1 {
		t.Errorf("%d served, %d refused, active_connections %d; want 1, 1, 1", len(term.got), len(term.refused), gauge(store))
	}

	// A held connection whose peer goes away is closed then.
	c, client = pipe(t)
	_ = client.Close()
	start = time.Now()
	ch.HandleConn(c)
	if d := time.Since(start); d >= delay {
		t.Errorf("a connection whose peer closed was held %v", d)
	}
}

func TestRuntimeEnabled(t *testing.T) {
	cfg := limit(1, 0)
	cfg.RuntimeEnabled = &corev3.RuntimeFeatureFlag{DefaultValue: wrapperspb.Bool(true), RuntimeKey: "limits.on"}
	rt := flags{"limits.on": false}
	ch, term, store := chain(t, cfg, rt)
	open(t, ch, 3)
	if len(term.got) != 3 || gauge(store) != 0 {
		t.Fatalf("disabled: %d served, active_connections %d; want 3 and 0 (none counted)", len(term.got), gauge(store))
	}
	rt["limits.on"] = true
	open(t, ch, 2)
	if len(term.got) != 4 || len(term.refused) != 1 {
		t.Errorf("enabled: %d served, %d refused; want 4 and 1", len(term.got), len(term.refused))
	}
	// Closing the connections admitted while disabled counts nothing down.
	for _, c := range term.got[:3] {
		_ = c.Close()
	}
	if gauge(store) != 1 {
		t.Errorf("active_connections %d, want 1", gauge(store))
	}
}

func TestCompileErrors(t *testing.T) {
	tests := map[string]struct {
		cfg  *clv3.ConnectionLimit
		want string
	}{
		"no stat_prefix":      {cfg: &clv3.ConnectionLimit{MaxConnections: wrapperspb.UInt64(1)}, want: "stat_prefix: required"},
		"no max_connections":  {cfg: &clv3.ConnectionLimit{StatPrefix: "p"}, want: "max_connections: required"},
		"zero connections":    {cfg: limit(0, 0), want: "max_connections: must be at least 1"},
		"negative delay":      {cfg: &clv3.ConnectionLimit{StatPrefix: "p", MaxConnections: wrapperspb.UInt64(1), Delay: durationpb.New(-time.Second)}, want: "delay: must be a valid, non-negative duration"},
		"every error at once": {cfg: &clv3.ConnectionLimit{}, want: "stat_prefix: required\nmax_connections: required"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Factory{}.Compile(tc.cfg, netfilter.Context{Stats: stats.NewStore()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile = %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := (Factory{}).Compile(&tcpproxyv3.TcpProxy{}, netfilter.Context{Stats: stats.NewStore()}); err == nil {
		t.Error("another filter's configuration was accepted")
	}
}
