package cache

import (
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

func TestParseRequestCacheControl(t *testing.T) {
	for _, tc := range []struct {
		cc     string
		has    bool
		pragma string
		want   requestCacheControl
	}{
		{"", false, "", requestCacheControl{maxAge: -1, minFresh: -1, maxStale: -1}},
		{"no-cache", true, "", requestCacheControl{mustValidate: true, maxAge: -1, minFresh: -1, maxStale: -1}},
		{"", false, "no-cache", requestCacheControl{mustValidate: true, maxAge: -1, minFresh: -1, maxStale: -1}},
		// Pragma counts only without Cache-Control.
		{"max-age=5", true, "no-cache", requestCacheControl{maxAge: 5 * time.Second, minFresh: -1, maxStale: -1}},
		{`No-Store, max-age="10", min-fresh=3, max-stale`, true, "", requestCacheControl{noStore: true, maxAge: 10 * time.Second, minFresh: 3 * time.Second, maxStale: forever}},
		{"max-stale=7,max-age=-1,min-fresh=x", true, "", requestCacheControl{maxAge: -1, minFresh: -1, maxStale: 7 * time.Second}},
		{"max-age=99999999999999999999", true, "", requestCacheControl{maxAge: forever, minFresh: -1, maxStale: -1}},
	} {
		if got := parseRequestCacheControl(tc.cc, tc.has, tc.pragma); got != tc.want {
			t.Errorf("%q (pragma %q): got %+v, want %+v", tc.cc, tc.pragma, got, tc.want)
		}
	}
}

func TestParseResponseCacheControl(t *testing.T) {
	for _, tc := range []struct {
		cc   string
		want responseCacheControl
	}{
		{"", responseCacheControl{maxAge: -1}},
		{"max-age=10", responseCacheControl{maxAge: 10 * time.Second}},
		{"s-maxage=20, max-age=10", responseCacheControl{maxAge: 20 * time.Second}},
		{"max-age=10, s-maxage=20", responseCacheControl{maxAge: 20 * time.Second}},
		{"max-age=10, max-age=30", responseCacheControl{maxAge: 10 * time.Second}},
		{"private, must-revalidate", responseCacheControl{noStore: true, noStale: true, maxAge: -1}},
		{"no-store", responseCacheControl{noStore: true, maxAge: -1}},
		{`no-cache="set-cookie", proxy-revalidate`, responseCacheControl{mustValidate: true, noStale: true, maxAge: -1}},
		{"public, max-age=abc", responseCacheControl{maxAge: -1}},
	} {
		if got := parseResponseCacheControl(tc.cc); got != tc.want {
			t.Errorf("%q: got %+v, want %+v", tc.cc, got, tc.want)
		}
	}
}

func TestParseHTTPTime(t *testing.T) {
	want := time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC)
	for _, s := range []string{"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"} {
		if got, ok := parseHTTPTime(s); !ok || !got.Equal(want) {
			t.Errorf("%q: got %v %v", s, got, ok)
		}
	}
	for _, s := range []string{"", "0", "yesterday"} {
		if _, ok := parseHTTPTime(s); ok {
			t.Errorf("%q parsed", s)
		}
	}
}

func TestCurrentAge(t *testing.T) {
	date := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		hasDate  bool
		age      string
		received time.Duration // after date
		now      time.Duration // after date
		want     time.Duration
	}{
		{"resident time only", true, "", 0, 30 * time.Second, 30 * time.Second},
		{"apparent age", true, "", 5 * time.Second, 10 * time.Second, 10 * time.Second},
		{"the Age header when larger", true, "100", 5 * time.Second, 10 * time.Second, 105 * time.Second},
		{"no Date", false, "", 5 * time.Second, 10 * time.Second, 5 * time.Second},
		{"a Date in the future", true, "", -50 * time.Second, 0, 50 * time.Second},
		{"a bad Age", true, "x", 0, 1500 * time.Millisecond, time.Second},
	} {
		got := currentAge(date, tc.hasDate, tc.age, date.Add(tc.received), date.Add(tc.now))
		if got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRequiresValidation(t *testing.T) {
	none := requestCacheControl{maxAge: -1, minFresh: -1, maxStale: -1}
	fresh60 := responseCacheControl{maxAge: 60 * time.Second}
	with := func(f func(*requestCacheControl)) requestCacheControl {
		r := none
		f(&r)
		return r
	}
	s := time.Second
	for _, tc := range []struct {
		name     string
		req      requestCacheControl
		resp     responseCacheControl
		lifetime time.Duration
		age      time.Duration
		want     bool
	}{
		{"fresh", none, fresh60, 60 * s, 10 * s, false},
		{"at its lifetime, still fresh", none, fresh60, 60 * s, 60 * s, false},
		{"stale", none, fresh60, 60 * s, 61 * s, true},
		{"response no-cache", none, responseCacheControl{mustValidate: true, maxAge: -1}, 0, 0, true},
		{"request no-cache", with(func(r *requestCacheControl) { r.mustValidate = true }), fresh60, 60 * s, 0, true},
		{"request max-age exceeded", with(func(r *requestCacheControl) { r.maxAge = 5 * s }), fresh60, 60 * s, 6 * s, true},
		{"request max-age met", with(func(r *requestCacheControl) { r.maxAge = 5 * s }), fresh60, 60 * s, 5 * s, false},
		{"min-fresh unmet", with(func(r *requestCacheControl) { r.minFresh = 20 * s }), fresh60, 60 * s, 50 * s, true},
		{"min-fresh met", with(func(r *requestCacheControl) { r.minFresh = 20 * s }), fresh60, 60 * s, 30 * s, false},
		{"max-stale allows", with(func(r *requestCacheControl) { r.maxStale = 10 * s }), fresh60, 60 * s, 65 * s, false},
		{"max-stale too short", with(func(r *requestCacheControl) { r.maxStale = 10 * s }), fresh60, 60 * s, 75 * s, true},
		{"max-stale without a value", with(func(r *requestCacheControl) { r.maxStale = forever }), fresh60, 60 * s, 1000 * s, false},
		{"must-revalidate beats max-stale", with(func(r *requestCacheControl) { r.maxStale = forever }), responseCacheControl{noStale: true, maxAge: 60 * s}, 60 * s, 61 * s, true},
	} {
		if got := requiresValidation(tc.req, tc.resp, tc.lifetime, tc.age); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFreshnessLifetimeAndCacheability(t *testing.T) {
	h := httpfiltertest.NewHeaders("date", "Mon, 01 Jan 2024 00:00:00 GMT", "expires", "Mon, 01 Jan 2024 00:05:00 GMT")
	if got := freshnessLifetime(responseCacheControl{maxAge: -1}, h); got != 5*time.Minute {
		t.Errorf("Expires - Date: %v", got)
	}
	if got := freshnessLifetime(responseCacheControl{maxAge: 7 * time.Second}, h); got != 7*time.Second {
		t.Errorf("max-age: %v", got)
	}
	if got := freshnessLifetime(responseCacheControl{maxAge: -1}, httpfiltertest.NewHeaders("date", "x", "expires", "0")); got != 0 {
		t.Errorf("a bad Expires: %v", got)
	}
	c := &filterConfig{}
	for _, tc := range []struct {
		status int
		h      []string
		want   bool
	}{
		{200, []string{"cache-control", "max-age=1"}, true},
		{200, []string{"cache-control", "no-cache"}, true},
		{200, []string{"date", "x", "expires", "y"}, true},
		{200, []string{"expires", "y"}, false},
		{200, nil, false},
		{200, []string{"cache-control", "max-age=1, no-store"}, false},
		{200, []string{"cache-control", "private, max-age=1"}, false},
		{404, []string{"cache-control", "max-age=1"}, true},
		{302, []string{"cache-control", "max-age=1"}, false},
		{500, []string{"cache-control", "max-age=1"}, false},
	} {
		if got := c.cacheableResponse(tc.status, httpfiltertest.NewHeaders(tc.h...)); got != tc.want {
			t.Errorf("%d %v: %v, want %v", tc.status, tc.h, got, tc.want)
		}
	}
}
