package stats

import (
	"context"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordConn is a net.Conn that keeps what is written to it.
type recordConn struct {
	net.Conn // nil: only the methods below are used
	mu       sync.Mutex
	writes   []string
}

func (c *recordConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, string(b))
	return len(b), nil
}

func (c *recordConn) SetWriteDeadline(time.Time) error { return nil }
func (c *recordConn) Close() error                     { return nil }

// statsdLine is one well-formed line: a name free of separators, a value,
// a type, and DogStatsD tags free of separators.
var statsdLine = regexp.MustCompile(`^[^:|\n\r]+:-?[0-9.e+-]+\|(c|g|ms|h)(\|#[^|,#\n\r]+:[^|,#\n\r]*(,[^|,#\n\r]+:[^|,#\n\r]*)*)?$`)

// FuzzStatsdLines: whatever the stat names and the prefix (both come from
// the configuration), every line sent is well formed and no datagram
// exceeds its bound.
func FuzzStatsdLines(f *testing.F) {
	f.Add("cluster.c1.upstream_rq_200", "proxy", uint64(3), int64(-2), uint64(15), false, true)
	f.Add("cluster.a:b|c\nd.upstream_rq_5xx", "pre|fix:", uint64(1), int64(0), uint64(300), true, true)
	f.Add("http.x,y#z.downstream_rq_2xx", "", uint64(0), int64(9), uint64(0), true, false)
	f.Fuzz(func(t *testing.T, name, prefix string, count uint64, gauge int64, hist uint64, dog, udp bool) {
		if name == "" || strings.Contains(name, "..") || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") {
			return // not a stat name the store accepts
		}
		s := NewStore()
		s.Counter(name + ".c").Add(count)
		s.Gauge(name + ".g").Set(gauge)
		s.HistogramWithUnit(name+".h", UnitMilliseconds).Record(hist % 1_000_000)
		conn := &recordConn{}
		const max = 200
		sink := NewStatsdSink(StatsdOptions{Prefix: prefix, DogStatsD: dog, UDP: udp, MaxDatagram: max,
			Dial: func(ctx context.Context) (net.Conn, error) { return conn, nil }})
		if err := NewFlusher(s, []Sink{sink}, FlusherOptions{}).Flush(); err != nil {
			t.Fatal(err)
		}
		for _, w := range conn.writes {
			if !udp {
				w = strings.TrimSuffix(w, "\n")
			}
			lines := strings.Split(w, "\n")
			if udp && len(w) > max && len(lines) > 1 {
				t.Errorf("a %d-byte datagram of %d lines, bound %d", len(w), len(lines), max)
			}
			for _, line := range lines {
				if !statsdLine.MatchString(line) {
					t.Errorf("malformed line %q", line)
				}
			}
		}
	})
}
