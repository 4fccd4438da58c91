package udpproxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

func TestCompileTunnelRefusesByPath(t *testing.T) {
	const base = `"proxy_host": "p", "target_host": "t", "default_target_port": 53`
	tests := map[string]struct{ js, want string }{
		"no proxy host":     {`{"target_host": "t", "default_target_port": 53}`, "proxy_host: required"},
		"no target host":    {`{"proxy_host": "p", "default_target_port": 53}`, "target_host: required"},
		"no target port":    {`{"proxy_host": "p", "target_host": "t"}`, "default_target_port: must be between"},
		"proxy port":        {`{` + base + `, "proxy_port": 70000}`, "proxy_port: must be between"},
		"post path alone":   {`{` + base + `, "post_path": "/x"}`, "post_path: needs use_post"},
		"relative path":     {`{` + base + `, "use_post": true, "post_path": "x"}`, "post_path: must start with /"},
		"zero attempts":     {`{` + base + `, "retry_options": {"max_connect_attempts": 0}}`, "retry_options.max_connect_attempts: must be at least 1"},
		"backoff":           {`{` + base + `, "retry_options": {"backoff_options": {"base_interval": "1s", "max_interval": "0.5s"}}}`, "retry_options.backoff_options.max_interval"},
		"host header":       {`{` + base + `, "headers_to_add": [{"header": {"key": "host", "value": "x"}}]}`, "headers_to_add[0].header.key"},
		"pseudo header":     {`{` + base + `, "headers_to_add": [{"header": {"key": ":path", "value": "x"}}]}`, "headers_to_add[0].header.key"},
		"bad command":       {`{` + base + `, "headers_to_add": [{"header": {"key": "x", "value": "%NOPE%"}}]}`, "headers_to_add[0].header.value"},
		"bad host operator": {`{"proxy_host": "%NOPE%", "target_host": "t", "default_target_port": 53}`, "proxy_host:"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := parse(t, `{"stat_prefix": "p", "cluster": "c", "tunneling_config": `+tc.js+`}`)
			_, err := compileTunnel(cfg.GetTunnelingConfig(), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestTunnelRequest(t *testing.T) {
	cfg := parse(t, `{"stat_prefix": "p", "cluster": "c", "tunneling_config": {
	  "proxy_host": "proxy.%UPSTREAM_CLUSTER%", "proxy_port": 443, "target_host": "fe80::1%%eth0", "default_target_port": 53,
	  "headers_to_add": [{"header": {"key": "x-a", "value": "1"}}, {"header": {"key": "x-a", "value": "2"}},
	    {"header": {"key": "x-b", "value": "3"}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}, {"header": {"key": "x-b", "value": "4"}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"},
	    {"header": {"key": "x-c", "value": "%DOWNSTREAM_REMOTE_ADDRESS%"}}, {"header": {"key": "x-d", "value": "%FILTER_STATE(none:PLAIN)%"}}]}}`)
	tc, err := compileTunnel(cfg.GetTunnelingConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &accesslog.Entry{UpstreamCluster: "c", DownstreamRemoteAddress: "127.0.0.2:999"}
	if got := tc.authority(e); got != "proxy.c:443" {
		t.Errorf("authority %q", got)
	}
	if got, want := tc.path(e), "/.well-known/masque/udp/fe80%3A%3A1%25eth0/53/"; got != want {
		t.Errorf("path %q, want %q", got, want)
	}
	hdr := http.Header{}
	tc.header(hdr, e)
	if got := hdr.Values("x-a"); len(got) != 2 || got[0] != "1" || got[1] != "2" {
		t.Errorf("x-a %q: appended", got)
	}
	if got := hdr.Values("x-b"); len(got) != 1 || got[0] != "4" {
		t.Errorf("x-b %q: overwritten", got)
	}
	if got := hdr.Get("x-c"); got != "127.0.0.2:999" {
		t.Errorf("x-c %q", got)
	}
	if _, ok := hdr["X-D"]; ok {
		t.Errorf("an empty value is not added without keep_empty_value")
	}

	post := parse(t, `{"stat_prefix": "p", "cluster": "c", "tunneling_config": {"proxy_host": "p", "target_host": "t", "default_target_port": 53, "use_post": true}}`)
	tp, err := compileTunnel(post.GetTunnelingConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tp.path(e); got != "/" {
		t.Errorf("POST path %q, want / by default", got)
	}
	if tp.maxAttempts != 1 || tp.buffer || tp.maxDatagrams != 1024 || tp.maxBytes != 16384 {
		t.Errorf("defaults %+v", tp)
	}
}
