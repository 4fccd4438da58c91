package server

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/xds"
)

// closeCounts is a network filter factory (config google.protobuf.Empty)
// whose read filters hold a resource: it counts the filters it compiled
// and their closes.
type closeCounts struct {
	mu               sync.Mutex
	compiled, closes int
	repeated         int
}

func (f *closeCounts) Compile(proto.Message, netfilter.Context) (netfilter.Filter, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compiled++
	return &countedFilter{owner: f}, nil
}

// counts returns how many filters were compiled, closed, and closed more
// than once.
func (f *closeCounts) counts() (compiled, closes, twice int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.compiled, f.closes, f.repeated
}

// countedFilter is a read filter of closeCounts.
type countedFilter struct {
	owner  *closeCounts
	closed bool
}

func (*countedFilter) OnNewConnection(netfilter.Conn) *netfilter.Refusal { return nil }

func (c *countedFilter) Close() error {
	c.owner.mu.Lock()
	defer c.owner.mu.Unlock()
	if c.closed {
		c.owner.repeated++
	}
	c.closed = true
	c.owner.closes++
	return nil
}

// countingListener is hcmListener with the counting filter before the
// connection manager.
func countingListener(name, body string) string {
	return strings.Replace(hcmListener(name, body, ""), "    - filters:\n", "    - filters:\n      - name: test.counting\n        typed_config: {\"@type\": type.googleapis.com/google.protobuf.Empty}\n", 1)
}

// TestFilterResourcesReleasedOnce checks that every network filter that
// holds resources is closed exactly once when its listener is refused,
// fails to bind, is replaced, or is removed.
func TestFilterResourcesReleasedOnce(t *testing.T) {
	f := &closeCounts{}
	ext, err := extension.New(append(builtin.Registry().List(), extension.Of("test.counting", netfilter.Category, &emptypb.Empty{}, f))...)
	if err != nil {
		t.Fatal(err)
	}
	s := startListenerServerWith(t, ext, ldsBootstrap(t), "--drain-strategy", "immediate", "--drain-time-s", "0")
	want := func(step string, compiled, closes int) {
		t.Helper()
		c, n, twice := f.counts()
		if c != compiled || n != closes || twice != 0 {
			t.Errorf("%s: %d filters compiled, %d closes (%d repeated), want %d and %d", step, c, n, twice, compiled, closes)
		}
	}
	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "1", Resources: parseListeners(t, countingListener("dyn", "one"))}); err != nil {
		t.Fatal(err)
	}
	want("added", 1, 0)

	// A chain whose terminal filter is missing (two counting filters and
	// nothing after them) never runs: its read filters are closed at once.
	const hcm = "      - name: envoy.filters.network.http_connection_manager"
	bad := countingListener("bad", "b")
	bad = bad[:strings.Index(bad, hcm)] + "      - name: test.counting\n        typed_config: {\"@type\": type.googleapis.com/google.protobuf.Empty}\n"
	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "2", Resources: parseListeners(t, countingListener("dyn", "one"), bad)}); err == nil {
		t.Fatal("a chain without a terminal filter was accepted")
	}
	want("refused chain", 3, 2)

	// A listener that cannot bind its address never runs either.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, port, _ := net.SplitHostPort(taken.Addr().String())
	clash := strings.Replace(countingListener("clash", "c"), "port_value: 0", "port_value: "+port, 1)
	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "3", Resources: parseListeners(t, countingListener("dyn", "one"), clash)}); err == nil {
		t.Fatal("a listener on a taken port was bound")
	}
	want("unbound listener", 4, 3)

	// A replaced listener, then a removed one, drains (at once here) and
	// releases its filters.
	drained := func(step string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for managerStat(s, "total_listeners_draining") != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the listener did not drain", step)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "4", Resources: parseListeners(t, countingListener("dyn", "two"))}); err != nil {
		t.Fatal(err)
	}
	drained("replaced")
	want("replaced", 5, 4)
	if err := s.applyListenerUpdate(xds.Update{VersionInfo: "5"}); err != nil {
		t.Fatal(err)
	}
	drained("removed")
	want("removed", 5, 5)
}
