package upstream

import (
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func TestRecordResponse(t *testing.T) {
	tests := map[string]struct {
		codes []int
		want  map[string]uint64 // the non-zero per-code and per-class counters
	}{
		"one success": {
			codes: []int{200},
			want:  map[string]uint64{"upstream_rq_2xx": 1, "upstream_rq_200": 1},
		},
		"mixed codes": {
			codes: []int{200, 204, 200, 503, 404},
			want: map[string]uint64{
				"upstream_rq_2xx": 3, "upstream_rq_200": 2, "upstream_rq_204": 1,
				"upstream_rq_4xx": 1, "upstream_rq_404": 1,
				"upstream_rq_5xx": 1, "upstream_rq_503": 1,
			},
		},
		"codes outside 100..599 count nowhere": {
			codes: []int{99, 600, 0, -1},
			want:  map[string]uint64{},
		},
		"bounds": {
			codes: []int{100, 599},
			want:  map[string]uint64{"upstream_rq_1xx": 1, "upstream_rq_100": 1, "upstream_rq_5xx": 1, "upstream_rq_599": 1},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			store := stats.NewStore()
			cs := NewClusterStats(store.Scope("cluster.c."))
			for _, code := range tc.codes {
				cs.RecordResponse(code)
			}
			got := map[string]uint64{}
			for _, n := range store.CounterNames() {
				short, ok := strings.CutPrefix(n, "cluster.c.upstream_rq_")
				if !ok || !isCodeOrClass(short) {
					continue
				}
				if v := store.Counter(n).Value(); v != 0 {
					got["upstream_rq_"+short] = v
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("counters = %v, want %v", got, tc.want)
			}
			for n, v := range tc.want {
				if got[n] != v {
					t.Errorf("%s = %d, want %d (all: %v)", n, got[n], v, got)
				}
			}
		})
	}
}

// isCodeOrClass reports whether s is a status code ("503") or a class ("5xx").
func isCodeOrClass(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i, r := range s {
		if r >= '0' && r <= '9' || i > 0 && r == 'x' {
			continue
		}
		return false
	}
	return true
}

func TestRecordResponseConcurrentFirstUse(t *testing.T) {
	store := stats.NewStore()
	cs := NewClusterStats(store.Scope("cluster.c."))
	const goroutines, each = 8, 100
	done := make(chan struct{})
	for range goroutines {
		go func() {
			defer func() { done <- struct{}{} }()
			for range each {
				cs.RecordResponse(200)
			}
		}()
	}
	for range goroutines {
		<-done
	}
	if got := store.Counter("cluster.c.upstream_rq_200").Value(); got != goroutines*each {
		t.Errorf("upstream_rq_200 = %d, want %d", got, goroutines*each)
	}
}
