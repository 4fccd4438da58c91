package listener

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// ioTimeout bounds every network wait of a test, so a bug fails the test
// instead of hanging it.
const ioTimeout = 5 * time.Second

// echoChain is a network filter chain that answers each line with
// "<chain name>:<line>" until the client closes, then closes.
type echoChain struct{ name string }

func (h echoChain) HandleConn(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if _, err := c.Write([]byte(h.name + ":" + line)); err != nil {
			return
		}
	}
}

// echoChains builds every filter chain as an echoChain named after the
// chain's name, or "default" for an unnamed default chain.
func echoChains(fc *listenerv3.FilterChain, _ *Drain) (ConnHandler, error) {
	if fc.GetName() == "fail" {
		return nil, errors.New("filters[0].typed_config: broken on purpose")
	}
	return echoChain{name: fc.GetName()}, nil
}

// parseListener reads a Listener written in YAML.
func parseListener(t testing.TB, text string) *listenerv3.Listener {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		t.Fatalf("listener YAML: %v", err)
	}
	lc := &listenerv3.Listener{}
	if err := protojson.Unmarshal(js, lc); err != nil {
		t.Fatalf("listener JSON: %v", err)
	}
	return lc
}

// testDeps are the dependencies of a test listener over store.
func testDeps(store *stats.Store, workers int) Deps {
	return Deps{Stats: store, Log: logr.Discard(), Workers: workers, BuildChain: echoChains}
}

// buildListener builds a listener from YAML with echo chains.
func buildListener(t testing.TB, store *stats.Store, workers int, text string) *Listener {
	t.Helper()
	l, err := Build(parseListener(t, text), testDeps(store, workers))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return l
}

// serve binds l unless it is bound already, serves it until the test ends
// and returns its address.
func serve(t testing.TB, l *Listener) string {
	t.Helper()
	if l.Addr() == nil {
		if err := l.Bind(); err != nil {
			t.Fatal(err)
		}
	}
	served := make(chan error, 1)
	go func() { served <- l.Serve() }()
	t.Cleanup(func() {
		l.Close()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(ioTimeout):
			t.Error("Serve did not return after Close")
		}
	})
	return l.Addr().String()
}

// exchange connects to addr, sends line and returns the answer line ("" if
// the connection was closed without one).
func exchange(t *testing.T, addr, line string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return roundTrip(t, c, line)
}

// roundTrip sends one line on c and reads the answer.
func roundTrip(t *testing.T, c net.Conn, line string) string {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return ""
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(got, "\n")
}

// eventually polls cond every few milliseconds for at most ioTimeout; it
// waits for effects that happen on another goroutine (a connection's
// close being accounted), never for time to pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(ioTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// haveIPv6 reports whether the machine can bind the IPv6 loopback.
func haveIPv6() bool {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

// timeAfter bounds a wait on a channel.
func timeAfter() <-chan time.Time { return time.After(ioTimeout) }
