package stats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// hystrixFixture is a store with two clusters' stats, a dashboard sink and
// a flusher whose clock advances one second per flush.
type hystrixFixture struct {
	store *Store
	sink  *HystrixSink
	f     *Flusher
	now   time.Time
	// clusterCalls counts the sink's calls for the cluster list.
	clusterCalls int
	clusters     []HystrixCluster
}

func newHystrixFixture(numBuckets int) *hystrixFixture {
	fx := &hystrixFixture{
		store: NewStore(),
		now:   time.Unix(1_700_000_000, 0),
		clusters: []HystrixCluster{
			{Name: "backend", MaxPendingRequests: 1024},
			{Name: "edge.v2", MaxPendingRequests: 5},
		},
	}
	fx.sink = NewHystrixSink(HystrixOptions{
		NumBuckets: numBuckets,
		Interval:   5 * time.Second,
		Clusters: func() []HystrixCluster {
			fx.clusterCalls++
			return fx.clusters
		},
	})
	fx.f = NewFlusher(fx.store, []Sink{fx.sink}, FlusherOptions{Now: func() time.Time {
		fx.now = fx.now.Add(time.Second)
		return fx.now
	}})
	return fx
}

// add adds n to the named counter of cluster c.
func (fx *hystrixFixture) add(c, name string, n uint64) {
	fx.store.Counter("cluster." + c + "." + name).Add(n)
}

func (fx *hystrixFixture) flush(t *testing.T) {
	t.Helper()
	if err := fx.f.Flush(); err != nil {
		t.Fatal(err)
	}
}

// receive takes the pending event set, failing if there is none.
func receive(t *testing.T, events <-chan []byte) []byte {
	t.Helper()
	select {
	case set, ok := <-events:
		if !ok {
			t.Fatal("the event channel is closed")
		}
		return set
	default:
		t.Fatal("no event set was delivered")
		return nil
	}
}

// checkEventSyntax checks an event set is SSE data lines holding JSON
// objects, ending with the keep-alive comment.
func checkEventSyntax(t *testing.T, set []byte) {
	t.Helper()
	if !bytes.HasSuffix(set, []byte(":\n\n")) {
		t.Errorf("event set does not end with the keep-alive ping: %q", set)
	}
	for _, msg := range strings.Split(strings.TrimSuffix(string(set), ":\n\n"), "\n\n") {
		if msg == "" {
			continue
		}
		data, ok := strings.CutPrefix(msg, "data: ")
		if !ok {
			t.Errorf("message %q is not a data line", msg)
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Errorf("event is not JSON: %v\n%s", err, data)
		}
	}
}

// TestHystrixRollingWindow drives known traffic through four flushes of a
// two-bucket window and compares the event sets with a golden file:
// counts start at zero for a new subscriber, include a flush's traffic for
// two flushes, then slide out.
func TestHystrixRollingWindow(t *testing.T) {
	fx := newHystrixFixture(2)
	// Traffic before anyone subscribes is not reported.
	fx.add("backend", "upstream_rq_2xx", 100)
	events, cancel := fx.sink.Subscribe()
	defer cancel()

	var out bytes.Buffer
	record := func(step string) {
		fx.flush(t)
		set := receive(t, events)
		checkEventSyntax(t, set)
		fmt.Fprintf(&out, "--- %s\n%s", step, set)
	}
	record("first flush: the window starts")

	fx.add("backend", "upstream_rq_2xx", 8)
	fx.add("backend", "upstream_rq_5xx", 3) // one of them is the timeout's 504
	fx.add("backend", "retry.upstream_rq_5xx", 1)
	fx.add("backend", "upstream_rq_timeout", 1)
	fx.add("backend", "upstream_rq_pending_overflow", 1)
	fx.store.Gauge("cluster.backend.membership_total").Set(3)
	rqTime := fx.store.HistogramWithUnit("cluster.backend.upstream_rq_time", UnitMilliseconds)
	for _, v := range []uint64{10, 20, 30, 40} {
		rqTime.Record(v)
	}
	fx.add("edge.v2", "upstream_rq_4xx", 2)
	fx.add("edge.v2", "upstream_rq_per_try_timeout", 2)
	record("second flush: traffic")
	record("third flush: still in the window")
	record("fourth flush: slid out")
	checkGolden(t, "hystrix_window.txt", out.Bytes())
}

func TestHystrixErrorPercentage(t *testing.T) {
	cases := map[string]struct {
		counters map[string]uint64
		want     []string
	}{
		"no traffic": {
			want: []string{`"errorPercentage": 0`, `"errorCount": 0`, `"requestCount": 0`},
		},
		"all good": {
			counters: map[string]uint64{"upstream_rq_2xx": 10},
			want:     []string{`"errorPercentage": 0`, `"requestCount": 10`, `"rollingCountSuccess": 10`},
		},
		"errors, timeouts and rejections count against": {
			counters: map[string]uint64{"upstream_rq_2xx": 5, "upstream_rq_4xx": 2, "upstream_rq_timeout": 1, "upstream_rq_5xx": 1, "upstream_rq_pending_overflow": 1},
			// errors: 4xx 2 + 5xx 1 - the timeout's 504 = 2; total 2+1+5+1 = 9.
			want: []string{`"errorPercentage": 44`, `"errorCount": 2`, `"requestCount": 9`, `"rollingCountTimeout": 1`,
				`"rollingCountSemaphoreRejected": 1`, `"rollingCountFailure": 2`},
		},
		"retried errors count too": {
			counters: map[string]uint64{"upstream_rq_5xx": 1, "retry.upstream_rq_5xx": 1, "retry.upstream_rq_4xx": 1, "upstream_rq_2xx": 1},
			want:     []string{`"errorPercentage": 75`, `"errorCount": 3`, `"requestCount": 4`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fx := newHystrixFixture(0)
			fx.clusters = fx.clusters[:1]
			events, cancel := fx.sink.Subscribe()
			defer cancel()
			fx.flush(t)
			receive(t, events)
			for n, v := range tc.counters {
				fx.add("backend", n, v)
			}
			fx.flush(t)
			set := string(receive(t, events))
			for _, w := range tc.want {
				if !strings.Contains(set, w) {
					t.Errorf("event set lacks %s:\n%s", w, set)
				}
			}
			for _, fixed := range []string{`"isCircuitBreakerOpen": false`, `"rollingCountShortCircuited": 0`,
				`"propertyValue_circuitBreakerForceClosed": true`, `"latencyExecute_mean": "null"`,
				`"propertyValue_metricsRollingStatisticalWindowInMilliseconds": 5000`} {
				if !strings.Contains(set, fixed) {
					t.Errorf("event set lacks the adaptation %s", fixed)
				}
			}
		})
	}
}

func TestHystrixNoSubscriberNoWork(t *testing.T) {
	fx := newHystrixFixture(0)
	fx.flush(t)
	if fx.clusterCalls != 0 {
		t.Errorf("a flush without subscribers listed the clusters %d times", fx.clusterCalls)
	}
	if n := fx.sink.Subscribers(); n != 0 {
		t.Errorf("%d subscribers", n)
	}
}

// TestHystrixSlowClient: an unread set is replaced by the next one, so a
// slow client gets the latest data and the flush never waits.
func TestHystrixSlowClient(t *testing.T) {
	fx := newHystrixFixture(0)
	events, cancel := fx.sink.Subscribe()
	defer cancel()
	fx.flush(t)
	fx.flush(t)
	fx.flush(t) // nobody reads: none of these flushes blocks
	set := string(receive(t, events))
	if want := fmt.Sprintf(`"currentTime": %d`, fx.now.Unix()); !strings.Contains(set, want) {
		t.Errorf("the pending set is not the latest (%s):\n%s", want, set)
	}
	select {
	case <-events:
		t.Error("more than one set was queued")
	default:
	}
}

func TestHystrixEverySubscriberGetsTheSet(t *testing.T) {
	fx := newHystrixFixture(0)
	a, cancelA := fx.sink.Subscribe()
	defer cancelA()
	b, cancelB := fx.sink.Subscribe()
	defer cancelB()
	fx.flush(t)
	if sa, sb := receive(t, a), receive(t, b); !bytes.Equal(sa, sb) {
		t.Errorf("subscribers got different sets:\n%s\n%s", sa, sb)
	}
	if fx.clusterCalls != 1 {
		t.Errorf("the set was computed %d times for two subscribers", fx.clusterCalls)
	}
}

// TestHystrixCancel: cancel closes the channel, can be repeated, and the
// last cancel forgets the windows, so a new client starts from zero.
func TestHystrixCancel(t *testing.T) {
	fx := newHystrixFixture(0)
	events, cancel := fx.sink.Subscribe()
	fx.flush(t)
	fx.add("backend", "upstream_rq_2xx", 4)
	cancel()
	cancel()
	// The set of the flush before cancel may still be pending; then the
	// channel must be closed.
	closed := false
	for range 2 {
		if _, ok := <-events; !ok {
			closed = true
			break
		}
	}
	if !closed {
		t.Error("the channel is not closed after cancel")
	}
	if n := fx.sink.Subscribers(); n != 0 {
		t.Errorf("%d subscribers after cancel", n)
	}

	events, cancel = fx.sink.Subscribe()
	defer cancel()
	fx.flush(t)
	if set := string(receive(t, events)); !strings.Contains(set, `"rollingCountSuccess": 0`) {
		t.Errorf("a new subscriber sees old counts:\n%s", set)
	}
}

func TestHystrixClose(t *testing.T) {
	fx := newHystrixFixture(0)
	events, cancel := fx.sink.Subscribe()
	if err := fx.sink.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-events; ok {
		t.Error("Close left a subscriber's channel open")
	}
	cancel() // after Close: a no-op, no double close
	late, lateCancel := fx.sink.Subscribe()
	defer lateCancel()
	if _, ok := <-late; ok {
		t.Error("Subscribe after Close returned an open channel")
	}
	fx.flush(t) // no subscriber left: nothing to do, no panic
}

// TestHystrixClusterChanges: a cluster that appears starts its window at
// zero; one that disappears is no longer reported.
func TestHystrixClusterChanges(t *testing.T) {
	fx := newHystrixFixture(0)
	fx.clusters = fx.clusters[:1]
	events, cancel := fx.sink.Subscribe()
	defer cancel()
	fx.flush(t)
	receive(t, events)

	fx.add("edge.v2", "upstream_rq_2xx", 7) // before edge.v2 is reported
	fx.clusters = []HystrixCluster{{Name: "edge.v2", MaxPendingRequests: 5}}
	fx.flush(t)
	set := string(receive(t, events))
	if strings.Contains(set, `"name": "backend"`) {
		t.Errorf("a removed cluster is still reported:\n%s", set)
	}
	if !strings.Contains(set, `"name": "edge.v2"`) || !strings.Contains(set, `"rollingCountSuccess": 0`) {
		t.Errorf("a new cluster does not start at zero:\n%s", set)
	}
}

// TestHystrixStatName: a cluster with an alt_stat_name is read from the
// stats under that name and reported under its own.
func TestHystrixStatName(t *testing.T) {
	fx := newHystrixFixture(0)
	fx.clusters = []HystrixCluster{{Name: "backend", StatName: "be_stats"}}
	events, cancel := fx.sink.Subscribe()
	defer cancel()
	fx.flush(t)
	receive(t, events)
	fx.add("be_stats", "upstream_rq_2xx", 6)
	fx.add("backend", "upstream_rq_2xx", 100) // not this cluster's stats
	fx.flush(t)
	set := string(receive(t, events))
	if !strings.Contains(set, `"name": "backend"`) || !strings.Contains(set, `"rollingCountSuccess": 6,`) {
		t.Errorf("event set:\n%s", set)
	}
}

func TestHystrixNoClusters(t *testing.T) {
	fx := newHystrixFixture(0)
	fx.clusters = nil
	events, cancel := fx.sink.Subscribe()
	defer cancel()
	fx.flush(t)
	if set := string(receive(t, events)); set != ":\n\n" {
		t.Errorf("event set without clusters = %q, want the keep-alive only", set)
	}
}

// BenchmarkHystrixFlush measures one flush of the dashboard sink with 100
// clusters and one subscriber, among 10,000 other counters.
func BenchmarkHystrixFlush(b *testing.B) {
	s := NewStore()
	var clusters []HystrixCluster
	for i := range 100 {
		name := "c" + itoa(i)
		clusters = append(clusters, HystrixCluster{Name: name, MaxPendingRequests: 1024})
		for _, c := range hystrixCounterNames {
			s.Counter("cluster." + name + "." + c).Inc()
		}
		s.HistogramWithUnit("cluster."+name+".upstream_rq_time", UnitMilliseconds).Record(uint64(i))
	}
	for i := range 10000 {
		s.Counter("other.counter_" + itoa(i)).Inc()
	}
	sink := NewHystrixSink(HystrixOptions{Clusters: func() []HystrixCluster { return clusters }})
	events, cancel := sink.Subscribe()
	defer cancel()
	f := NewFlusher(s, []Sink{sink}, FlusherOptions{})
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := f.Flush(); err != nil {
			b.Fatal(err)
		}
		<-events
	}
}
