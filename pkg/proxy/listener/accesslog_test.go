package listener

import (
	"net"
	"strings"
	"testing"
	"time"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	datav3 "github.com/envoyproxy/go-control-plane/envoy/data/accesslog/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/listenerfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// entryLog is an access_log list that hands its entries to a channel.
type entryLog struct{ entries chan accesslog.Entry }

func (l *entryLog) Empty() bool { return false }
func (l *entryLog) Log(buf []byte, e *accesslog.Entry) ([]byte, error) {
	l.entries <- *e
	return buf, nil
}
func (l *entryLog) Close() error { return nil }

// next waits for the next entry.
func (l *entryLog) next(t *testing.T) accesslog.Entry {
	t.Helper()
	select {
	case e := <-l.entries:
		return e
	case <-timeAfter():
		t.Fatal("no access log entry")
		return accesslog.Entry{}
	}
}

// none checks that nothing was logged so far.
func (l *entryLog) none(t *testing.T) {
	t.Helper()
	select {
	case e := <-l.entries:
		t.Fatalf("unexpected access log entry %+v", e)
	default:
	}
}

// loggedDeps are test dependencies whose access_log compiles to logs.
func loggedDeps(store *stats.Store, logs *entryLog) Deps {
	deps := testDeps(store, 1)
	deps.AccessLogs = func(prefix string, cfgs []*accesslogv3.AccessLog) (netfilter.AccessLogger, error) {
		if prefix != "access_log" || len(cfgs) != 1 {
			panic("unexpected access_log compile")
		}
		return logs, nil
	}
	return deps
}

const loggedListenerYAML = `
name: logged
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
access_log: [{name: envoy.access_loggers.stdout}]
filter_chains:
- name: only-port-1
  filter_chain_match: {destination_port: 1}
`

func TestListenerAccessLogLogsEachConnectionAtItsEnd(t *testing.T) {
	logs := &entryLog{entries: make(chan accesslog.Entry, 4)}
	l, err := Build(parseListener(t, `
name: logged
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
access_log: [{name: envoy.access_loggers.stdout}]
filter_chains: [{name: echo}]
`), loggedDeps(stats.NewStore(), logs))
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, l)
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if got := roundTrip(t, c, "hi"); got != "echo:hi" {
		t.Fatalf("answer %q", got)
	}
	logs.none(t) // not before the connection ends
	client := c.LocalAddr().String()
	_ = c.Close()
	e := logs.next(t)
	if e.Type != datav3.AccessLogType_NotSet || e.FilterChainName != "echo" || e.DownstreamRemoteAddress != client ||
		e.DownstreamLocalAddress != addr || e.ResponseFlags != 0 || e.StartTime.IsZero() || e.Duration < 0 {
		t.Fatalf("entry %+v", e)
	}
}

func TestListenerAccessLogLogsAConnectionNoChainMatchedWithNR(t *testing.T) {
	logs := &entryLog{entries: make(chan accesslog.Entry, 4)}
	l, err := Build(parseListener(t, loggedListenerYAML), loggedDeps(stats.NewStore(), logs))
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, l)
	if got := exchange(t, addr, "hi"); got != "" {
		t.Fatalf("answer %q from a listener no chain of which matches", got)
	}
	e := logs.next(t)
	if e.ResponseFlags != accesslog.NoRouteFound || e.ResponseCodeDetails != "filter_chain_not_found" ||
		e.FilterChainName != "" || e.DownstreamLocalAddress != addr || e.StartTime.IsZero() {
		t.Fatalf("entry %+v", e)
	}
	if got := string(e.ResponseFlags.AppendShort(nil)); got != "NR" {
		t.Fatalf("flags %q", got)
	}
}

func TestListenerAccessLogLogsAConnectionAListenerFilterRejected(t *testing.T) {
	logs := &entryLog{entries: make(chan accesslog.Entry, 4)}
	deps := loggedDeps(stats.NewStore(), logs)
	deps.BuildListenerFilter = func(*listenerv3.ListenerFilter) (listenerfilter.Filter, error) {
		return fakeFilter{reject: true}, nil
	}
	l, err := Build(parseListener(t, `
name: logged
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
access_log: [{name: envoy.access_loggers.stdout}]
listener_filters: [{name: reject}]
filter_chains: [{name: echo}]
`), deps)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, l)
	if got := exchange(t, addr, "hi"); got != "" {
		t.Fatalf("answer %q through a rejecting listener filter", got)
	}
	e := logs.next(t)
	if e.ResponseFlags != 0 || e.FilterChainName != "" || e.DownstreamLocalAddress != addr || e.StartTime.IsZero() {
		t.Fatalf("entry %+v", e)
	}
}

// infoChain records a StreamInfo on its connection, closes the
// connection, and only then finishes its account.
type infoChain struct {
	done   chan struct{}
	closed chan struct{}
}

type fixedInfo struct{}

func (fixedInfo) ConnectionLogEntry() *accesslog.Entry {
	return &accesslog.Entry{BytesReceived: 7, BytesSent: 9, UpstreamCluster: "c", ResponseFlags: accesslog.UpstreamConnectionFailure}
}

func (h infoChain) HandleConn(c net.Conn) {
	held := netfilter.SetStreamInfo(c, fixedInfo{})
	_ = c.Close()
	close(h.closed)
	<-h.done
	if held {
		netfilter.StreamInfoDone(c)
	}
}

func TestListenerAccessLogTakesTheFiltersAccountOnceItIsDone(t *testing.T) {
	logs := &entryLog{entries: make(chan accesslog.Entry, 4)}
	deps := loggedDeps(stats.NewStore(), logs)
	h := infoChain{done: make(chan struct{}), closed: make(chan struct{})}
	deps.BuildChain = func(*listenerv3.FilterChain, *Drain) (ConnHandler, error) { return h, nil }
	l, err := Build(parseListener(t, `
name: logged
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
access_log: [{name: envoy.access_loggers.stdout}]
filter_chains: [{name: proxy}]
`), deps)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, l)
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-h.closed:
	case <-timeAfter():
		t.Fatal("the chain did not run")
	}
	logs.none(t) // held by the filter
	close(h.done)
	e := logs.next(t)
	if e.BytesReceived != 7 || e.BytesSent != 9 || e.UpstreamCluster != "c" || e.ResponseFlags != accesslog.UpstreamConnectionFailure ||
		e.FilterChainName != "proxy" || e.Type != datav3.AccessLogType_NotSet || e.StartTime.IsZero() {
		t.Fatalf("entry %+v", e)
	}
}

func TestListenerWithoutAccessLogKeepsNoRecord(t *testing.T) {
	l := buildListener(t, stats.NewStore(), 1, `
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
filter_chains: [{name: echo}]
`)
	if l.AccessLogs() != nil {
		t.Fatal("access logs without access_log")
	}
	c := &Conn{owner: l}
	if c.SetStreamInfo(fixedInfo{}) {
		t.Fatal("a connection of a listener without access_log took a StreamInfo")
	}
	if got := (&Conn{chain: "filter_chains[0]"}).FilterChainName(); got != "" {
		t.Fatalf("an unnamed chain's name is %q", got)
	}
}

func TestListenerAccessLogRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		yaml string
		deps func(Deps) Deps
		want string
	}{
		"UDP listener": {
			yaml: `
address: {socket_address: {address: 127.0.0.1, port_value: 0, protocol: UDP}}
access_log: [{name: envoy.access_loggers.stdout}]
`,
			deps: func(d Deps) Deps { return d },
			want: "access_log: not supported on a UDP listener",
		},
		"no compiler": {
			yaml: `
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
access_log: [{name: envoy.access_loggers.stdout}]
filter_chains: [{name: echo}]
`,
			deps: func(d Deps) Deps { d.AccessLogs = nil; return d },
			want: "access_log: listener access logs are not supported here",
		},
	} {
		t.Run(name, func(t *testing.T) {
			logs := &entryLog{entries: make(chan accesslog.Entry, 1)}
			_, err := Build(parseListener(t, tc.yaml), tc.deps(loggedDeps(stats.NewStore(), logs)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// The accept time of a logged connection is its entry's start, taken
// before the listener filters run.
func TestListenerAccessLogStartsAtAccept(t *testing.T) {
	logs := &entryLog{entries: make(chan accesslog.Entry, 4)}
	deps := loggedDeps(stats.NewStore(), logs)
	now := time.Unix(1000, 0)
	deps.Now = func() time.Time { now = now.Add(time.Second); return now }
	l, err := Build(parseListener(t, loggedListenerYAML), deps)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, l)
	_ = exchange(t, addr, "hi")
	e := logs.next(t)
	if e.StartTime.Before(time.Unix(1000, 0)) || e.Duration != time.Second {
		t.Fatalf("start %v duration %v", e.StartTime, e.Duration)
	}
}

// discardLog is an access_log list that drops its entries.
type discardLog struct{}

func (discardLog) Empty() bool                                        { return false }
func (discardLog) Log(buf []byte, _ *accesslog.Entry) ([]byte, error) { return buf, nil }
func (discardLog) Close() error                                       { return nil }

// BenchmarkAcceptCloseLogged is BenchmarkAcceptClose with a listener
// access_log whose entries are dropped: the listener's own cost of
// logging a connection (its record and entry), without the formatting.
func BenchmarkAcceptCloseLogged(b *testing.B) {
	deps := testDeps(stats.NewStore(), 1)
	deps.AccessLogs = func(string, []*accesslogv3.AccessLog) (netfilter.AccessLogger, error) { return discardLog{}, nil }
	benchAcceptClose(b, `
address: {socket_address: {address: 127.0.0.1, port_value: 0}}
access_log: [{name: envoy.access_loggers.stdout}]
filter_chains: [{name: c}]
`, deps)
}
