package stats

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzHystrixEvents: whatever the cluster name (it comes from the
// configuration) and the counts, every event is one line of valid JSON
// naming the cluster, and no count is negative.
func FuzzHystrixEvents(f *testing.F) {
	f.Add("backend", uint64(8), uint64(3), uint64(1), uint64(0), uint64(1))
	f.Add(`we"ird\name`+"\n</script>", uint64(0), uint64(0), uint64(5), uint64(2), uint64(0))
	f.Fuzz(func(t *testing.T, cluster string, ok, fivexx, timeouts, perTry, overflow uint64) {
		s := NewStore()
		sink := NewHystrixSink(HystrixOptions{Interval: time.Second,
			Clusters: func() []HystrixCluster { return []HystrixCluster{{Name: cluster, MaxPendingRequests: 1}} }})
		f := NewFlusher(s, []Sink{sink}, FlusherOptions{})
		events, cancel := sink.Subscribe()
		defer cancel()
		if err := f.Flush(); err != nil {
			t.Fatal(err)
		}
		<-events
		p := "cluster." + cluster + "."
		s.Counter(p + "upstream_rq_2xx").Add(ok % 1e9)
		s.Counter(p + "upstream_rq_5xx").Add(fivexx % 1e9)
		s.Counter(p + "upstream_rq_timeout").Add(timeouts % 1e9)
		s.Counter(p + "upstream_rq_per_try_timeout").Add(perTry % 1e9)
		s.Counter(p + "upstream_rq_pending_overflow").Add(overflow % 1e9)
		if err := f.Flush(); err != nil {
			t.Fatal(err)
		}
		set := string(<-events)
		msgs := strings.Split(strings.TrimSuffix(set, ":\n\n"), "\n\n")
		if len(msgs) != 3 || msgs[2] != "" {
			t.Fatalf("want two events, got %q", set)
		}
		for _, m := range msgs[:2] {
			data, found := strings.CutPrefix(m, "data: ")
			if !found || strings.Contains(data, "\n") {
				t.Fatalf("event %q is not one data line", m)
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("event is not JSON: %v\n%s", err, data)
			}
			if ev["name"] != string([]rune(cluster)) { // invalid UTF-8 bytes become U+FFFD
				t.Errorf("name %q, want %q", ev["name"], cluster)
			}
			for k, v := range ev {
				if n, isNum := v.(float64); isNum && n < 0 {
					t.Errorf("%s = %v is negative", k, n)
				}
			}
		}
	})
}
