package admin

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzStatsQuery sends arbitrary query strings to /stats and
// /stats/prometheus, with both filter engines: the answer is always a
// complete 200 render or a 400 naming the mistake, never a panic or a hang.
func FuzzStatsQuery(f *testing.F) {
	for _, seed := range []string{
		"", "usedonly", "usedonly=false&filter=c1", "filter=%5Ba", "filter=(?!x)", "filter=a{2,}",
		"format=json", "format=prometheus&text_readouts", "format=xml", "format=",
		"histogram_buckets=cumulative", "histogram_buckets=detailed&format=json",
		"histogram_buckets=disjoint&format=prometheus", "histogram_buckets=none",
		"type=Counters", "type=counters", "type=&filter=&format=", "filter=%zz&type=Gauges",
		"filter=" + url.QueryEscape(`^(a+)+$`),
	} {
		f.Add(seed, false, false)
		f.Add(seed, true, true)
	}
	f.Fuzz(func(t *testing.T, query string, prometheus, ecmaScript bool) {
		src := &fakeStats{rec: &recorder{}, store: sampleStore(t), useRE2: !ecmaScript}
		path := "/stats"
		if prometheus {
			path = "/stats/prometheus"
		}
		hr, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:9901"+path, nil)
		if err != nil {
			t.Skip()
		}
		hr.URL.RawQuery = query
		rec := serveHTTP(newStatsAdmin(t, src).Handler(), hr)
		body := rec.Body.String()
		switch rec.Code {
		case http.StatusOK:
			ct := rec.Header().Get("Content-Type")
			switch {
			case strings.HasPrefix(body, `{"stats":`):
				if ct != ContentTypeJSON || !strings.HasSuffix(body, "]}") {
					t.Errorf("JSON render %q with content type %q is incomplete", body, ct)
				}
			case ct == ContentTypePrometheus, ct == ContentTypeText:
				if body != "" && !strings.HasSuffix(body, "\n") {
					t.Errorf("render does not end with a newline: %q", body)
				}
			default:
				t.Errorf("content type %q for %q", ct, body)
			}
		case http.StatusBadRequest:
			if body == "" {
				t.Error("400 without a reason")
			}
		default:
			t.Errorf("status %d for %q", rec.Code, query)
		}
	})
}
