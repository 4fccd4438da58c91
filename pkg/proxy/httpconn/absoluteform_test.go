package httpconn

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

func TestAppendRequestHeadTarget(t *testing.T) {
	tests := map[string]struct {
		f             upstream.HTTP1Format
		matchUpstream bool
		scheme        string
		connect       bool
		want          string
	}{
		"origin form":                       {want: "GET /p?q=1 HTTP/1.1\r\n"},
		"absolute form, downstream scheme":  {f: upstream.HTTP1Format{FullyQualifiedURL: true}, scheme: "https", want: "GET https://a.example:81/p?q=1 HTTP/1.1\r\n"},
		"absolute form, match_upstream":     {f: upstream.HTTP1Format{FullyQualifiedURL: true}, scheme: "https", matchUpstream: true, want: "GET http://a.example:81/p?q=1 HTTP/1.1\r\n"},
		"absolute form, TLS cluster":        {f: upstream.HTTP1Format{FullyQualifiedURL: true, Secure: true}, scheme: "http", matchUpstream: true, want: "GET https://a.example:81/p?q=1 HTTP/1.1\r\n"},
		"CONNECT keeps the authority form":  {f: upstream.HTTP1Format{FullyQualifiedURL: true}, connect: true, want: "GET a.example:81 HTTP/1.1\r\n"},
		"proper case with the absolute URL": {f: upstream.HTTP1Format{FullyQualifiedURL: true, ProperCase: true}, scheme: "http", want: "GET http://a.example:81/p?q=1 HTTP/1.1\r\nHost: a.example:81\r\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := &Manager{}
			m.cfg.schemeMatchUpstream = tc.matchUpstream
			s := &stream{m: m, method: "GET", upPath: "/p?q=1", upAuthority: "a.example:81", scheme: tc.scheme, reqLength: -1}
			s.upg.connect = tc.connect
			var o outBuf
			s.appendRequestHead(&o, &tc.f)
			if got := string(o.b); !strings.HasPrefix(got, tc.want) {
				t.Errorf("head = %q, want prefix %q", got, tc.want)
			}
		})
	}
}

func TestReadIgnoreUpgrade(t *testing.T) {
	ms, err := readIgnoreUpgrade(&corev3.Http1ProtocolOptions{IgnoreHttp_11Upgrade: []*matcherv3.StringMatcher{
		{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "tls/"}, IgnoreCase: true},
		{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "h2c-ish"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]bool{"TLS/1.2": true, "tls/1.0": true, "h2c-ish": true, "websocket": false, "TLS": false} {
		if got := ms.Matches(v); got != want {
			t.Errorf("Matches(%q) = %v, want %v", v, got, want)
		}
	}
	if ms, err := readIgnoreUpgrade(&corev3.Http1ProtocolOptions{}); ms != nil || err != nil {
		t.Errorf("empty list: %v, %v; want nil, nil", ms, err)
	}
	_, err = readIgnoreUpgrade(&corev3.Http1ProtocolOptions{IgnoreHttp_11Upgrade: []*matcherv3.StringMatcher{
		{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "("}}},
	}})
	if err == nil || !strings.HasPrefix(err.Error(), "http_protocol_options.ignore_http_11_upgrade[0].safe_regex") {
		t.Errorf("bad regex: %v", err)
	}
}
