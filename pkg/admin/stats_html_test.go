package admin

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func TestStatsHTML(t *testing.T) {
	runStatsCases(t, "stats", map[string]statsCase{
		"html":                 {req: request{target: "/stats?format=html"}, calls: renderCalls},
		"html-usedonly-filter": {req: request{target: "/stats?format=html&usedonly&filter=c1"}, calls: renderCalls},
		"html-type-counters":   {req: request{target: "/stats?format=html&type=Counters"}, calls: renderCalls},
		"html-type-histograms": {req: request{target: "/stats?format=html&type=Histograms"}, calls: renderCalls},
		"html-no-match":        {req: request{target: "/stats?format=html&filter=nothing-matches-this"}, calls: renderCalls},
		"html-only-histograms": {req: request{target: "/stats?format=html&filter=_time"}, calls: renderCalls},
		"html-buckets-cumulative": {
			req: request{target: "/stats?format=html&histogram_buckets=cumulative&type=Histograms"}, calls: renderCalls,
		},
		"html-buckets-disjoint": {
			req: request{target: "/stats?format=html&histogram_buckets=disjoint&type=Histograms"}, calls: renderCalls,
		},
		"html-buckets-detailed": {
			req: request{target: "/stats?format=html&histogram_buckets=detailed&type=Histograms"}, calls: renderCalls,
		},
		"html-empty-store": {empty: true, req: request{target: "/stats?format=html"}, calls: renderCalls},
		"html-form-body": { // the home page's stats form, submitted
			req:   request{method: "POST", target: "/stats", body: "format=html&filter=c2&type=All&usedonly=on", header: formHeader()},
			calls: renderCalls,
		},
	})
}

// TestStatsActiveHTML checks the active page (its nonce hidden): the form
// shows the request's filter and type, and the page reads nothing.
func TestStatsActiveHTML(t *testing.T) {
	tests := map[string]string{
		"active-html":        "/stats?format=active-html",
		"active-html-filter": "/stats?format=active-html&filter=upstream%27%3E&type=Counters",
	}
	for name, target := range tests {
		t.Run(name, func(t *testing.T) {
			src := &fakeStats{rec: &recorder{}, store: sampleStore(t), useRE2: true}
			rec := serve(t, newStatsAdmin(t, src).Handler(), request{target: target})
			nonce := cspNonce(t, rec.Header())
			checkResponseGolden(t, "stats-"+name, rec, nonce, "NONCE")
			if got := src.rec.take(); !slices.Equal(got, refusedCalls) {
				t.Errorf("calls on the source = %q, want only the filter engine's: the page renders no stat", got)
			}
		})
	}
}

// cspNonceRE finds the script nonce of a Content-Security-Policy.
var cspNonceRE = regexp.MustCompile(`script-src 'nonce-([A-Za-z0-9_-]+)'`)

// cspNonce returns the script nonce of a page's headers.
func cspNonce(t *testing.T, h http.Header) string {
	t.Helper()
	m := cspNonceRE.FindStringSubmatch(h.Get("Content-Security-Policy"))
	if m == nil || len(m[1]) < 20 {
		t.Fatalf("Content-Security-Policy %q has no script nonce", h.Get("Content-Security-Policy"))
	}
	return m[1]
}

// TestStatsPagesEscape checks that markup in stat names and text readouts
// stays text on both pages: no element, attribute or script comes from a
// stat.
func TestStatsPagesEscape(t *testing.T) {
	s := stats.NewStore()
	s.TextReadout("evil.<script>alert(1)</script>").Set("</td><script>alert(2)</script><img src=x onerror=alert(3)>")
	s.Counter("evil.'\"><b>bold</b>").Inc()
	s.Gauge("evil.&amp;").Set(1)
	src := &fakeStats{rec: &recorder{}, store: s, useRE2: true}
	h := newStatsAdmin(t, src).Handler()

	page := serve(t, h, request{target: "/stats?format=html"}).Body.String()
	for _, raw := range []string{"<script", "<img", "<b>", "onerror=alert(3)>"} {
		if strings.Contains(page, raw) {
			t.Errorf("html page contains %q unescaped", raw)
		}
	}
	for _, escaped := range []string{
		"evil.&lt;script&gt;alert(1)&lt;/script&gt;",
		"&lt;/td&gt;&lt;script&gt;alert(2)&lt;/script&gt;&lt;img src=x onerror=alert(3)&gt;",
		"evil.&#39;&#34;&gt;&lt;b&gt;bold&lt;/b&gt;",
		"evil.&amp;amp;",
	} {
		if !strings.Contains(page, escaped) {
			t.Errorf("html page lacks %q", escaped)
		}
	}

	active := serve(t, h, request{target: "/stats?format=active-html&filter=%27%3E%3Cscript%3Ealert(4)%3C/script%3E"})
	nonce := cspNonce(t, active.Header())
	body := active.Body.String()
	if n := strings.Count(body, "<script"); n != 1 || !strings.Contains(body, "<script nonce='"+nonce+"'>") {
		t.Errorf("active page has %d script elements, want exactly its own, with the nonce", n)
	}
	if !strings.Contains(body, "value='&#39;&gt;&lt;script&gt;alert(4)&lt;/script&gt;'") {
		t.Errorf("active page does not show the filter escaped")
	}
}

// TestStatsPagesHeaders checks the headers that confine the pages: HTML,
// a policy allowing only the page's own style, script and requests, and
// no framing by other sites.
func TestStatsPagesHeaders(t *testing.T) {
	src := &fakeStats{rec: &recorder{}, store: sampleStore(t), useRE2: true}
	h := newStatsAdmin(t, src).Handler()
	for _, target := range []string{"/stats?format=html", "/stats?format=active-html"} {
		rec := serve(t, h, request{target: target})
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ContentTypeHTML {
			t.Errorf("%s: status %d, content type %q", target, rec.Code, rec.Header().Get("Content-Type"))
		}
		csp := rec.Header().Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "frame-ancestors 'self'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: Content-Security-Policy %q lacks %q", target, csp, want)
			}
		}
		if got := rec.Header().Get("X-Frame-Options"); got != "SAMEORIGIN" {
			t.Errorf("%s: X-Frame-Options %q", target, got)
		}
		for _, banned := range []string{"http://", "https://", " src=", "@import"} {
			if strings.Contains(rec.Body.String(), banned) {
				t.Errorf("%s: page contains %q: it must be self-contained", target, banned)
			}
		}
	}
	// The html page has no script: its policy allows none.
	if csp := serve(t, h, request{target: "/stats?format=html"}).Header().Get("Content-Security-Policy"); strings.Contains(csp, "script-src") {
		t.Errorf("html page's policy %q allows scripts", csp)
	}
}
