package stats

import (
	"strings"
	"testing"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func tagMap(tags []Tag) []string {
	out := []string{}
	for _, t := range tags {
		out = append(out, t.Name+"="+string(t.Value))
	}
	return out
}

func TestDefaultTagExtraction(t *testing.T) {
	cases := map[string]struct {
		name     string
		wantName string
		wantTags []string
	}{
		"cluster":            {"cluster.cluster_0.upstream_cx_active", "cluster.upstream_cx_active", []string{"proxy.cluster_name=cluster_0"}},
		"response code":      {"cluster.c1.upstream_rq_200", "cluster.upstream_rq", []string{"proxy.response_code=200", "proxy.cluster_name=c1"}},
		"code class":         {"http.admin.downstream_rq_4xx", "http.downstream_rq_xx", []string{"proxy.response_code_class=4", "proxy.http_conn_manager_prefix=admin"}},
		"admin listener":     {"listener.admin.http.admin.downstream_rq_4xx", "listener.admin.http.downstream_rq_xx", []string{"proxy.response_code_class=4", "proxy.http_conn_manager_prefix=admin"}},
		"ipv4 listener":      {"listener.0.0.0.0_10000.downstream_cx_total", "listener.downstream_cx_total", []string{"proxy.listener_address=0.0.0.0_10000"}},
		"ipv6 listener":      {"listener.[__1]_80.downstream_cx_total", "listener.downstream_cx_total", []string{"proxy.listener_address=[__1]_80"}},
		"worker":             {"listener.0.0.0.0_80.worker_1.downstream_cx_active", "listener.downstream_cx_active", []string{"proxy.worker_id=worker_1", "proxy.listener_address=0.0.0.0_80"}},
		"server worker":      {"server.worker_0.watchdog_miss", "server.watchdog_miss", []string{"proxy.worker_id=worker_0"}},
		"vhost route":        {"vhost.vh.route.r1.upstream_rq_total", "vhost.route.upstream_rq_total", []string{"proxy.virtual_host=vh", "proxy.route=r1"}},
		"virtual cluster":    {"vhost.vh.vcluster.vc.upstream_rq_time", "vhost.vcluster.upstream_rq_time", []string{"proxy.virtual_cluster=vc", "proxy.virtual_host=vh"}},
		"rds dotted name":    {"http.hcm.rds.my.route.config.update_success", "http.rds.update_success", []string{"proxy.http_conn_manager_prefix=hcm", "proxy.rds_route_config=my.route.config"}},
		"tcp":                {"tcp.ingress.downstream_cx_total", "tcp.downstream_cx_total", []string{"proxy.tcp_prefix=ingress"}},
		"cluster cipher":     {"cluster.c.ssl.ciphers.AES128", "cluster.ssl.ciphers", []string{"cipher_suite=AES128", "proxy.cluster_name=c"}},
		"listener cipher":    {"listener.1.2.3.4_80.ssl.ciphers.AES", "listener.ssl.ciphers", []string{"proxy.ssl_cipher=AES", "proxy.listener_address=1.2.3.4_80"}},
		"grpc bridge":        {"cluster.c.grpc.svc.meth.success", "cluster.grpc.success", []string{"proxy.grpc_bridge_method=meth", "proxy.grpc_bridge_service=svc", "proxy.cluster_name=c"}},
		"no tags":            {"server.live", "server.live", []string{}},
		"local rate limit":   {"pfx.http_local_rate_limit.enabled", "http_local_rate_limit.enabled", []string{"proxy.local_http_ratelimit_prefix=pfx"}},
		"network rate limit": {"local_rate_limit.pfx.rate_limited", "local_rate_limit.rate_limited", []string{"proxy.local_network_ratelimit_prefix=pfx"}},
		"connection limit":   {"connection_limit.pfx.limited_connections", "connection_limit.limited_connections", []string{"proxy.connection_limit_prefix=pfx"}},
		"proxy protocol":     {"proxy_proto.versions.v1.found", "proxy_proto.found", []string{"proxy.proxy_protocol_version=1"}},
		"proxy protocol pfx": {"proxy_proto.pfx.versions.v2.error", "proxy_proto.error", []string{"proxy.proxy_protocol_version=2", "proxy.proxy_protocol_prefix=pfx"}},
		"proxy protocol nf":  {"proxy_proto.not_found_allowed", "proxy_proto.not_found_allowed", []string{}},
		"proxy protocol pnf": {"proxy_proto.pfx.not_found_disallowed", "proxy_proto.not_found_disallowed", []string{"proxy.proxy_protocol_prefix=pfx"}},
	}
	p, err := NewTagProducer(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, tags := p.ExtractString(tc.name)
			if got != tc.wantName {
				t.Errorf("name %q, want %q", got, tc.wantName)
			}
			if diff := cmp.Diff(tc.wantTags, tagMap(tags)); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfiguredTags(t *testing.T) {
	cases := map[string]struct {
		cfg      *metricsv3.StatsConfig
		name     string
		wantName string
		wantTags []string
	}{
		"custom regex first": {
			cfg:      &metricsv3.StatsConfig{StatsTags: []*metricsv3.TagSpecifier{{TagName: "tenant", TagValue: &metricsv3.TagSpecifier_Regex{Regex: `^cluster\.((.+?)-)`}}}},
			name:     "cluster.acme-web.upstream_rq_total",
			wantName: "cluster.upstream_rq_total", // both removals apply
			wantTags: []string{"tenant=acme", "proxy.cluster_name=acme-web"},
		},
		"fixed value": {
			cfg:      &metricsv3.StatsConfig{StatsTags: []*metricsv3.TagSpecifier{{TagName: "zone", TagValue: &metricsv3.TagSpecifier_FixedValue{FixedValue: "z1"}}}},
			name:     "cluster.c.x",
			wantName: "cluster.x",
			wantTags: []string{"zone=z1", "proxy.cluster_name=c"},
		},
		"defaults off": {
			cfg:      &metricsv3.StatsConfig{UseAllDefaultTags: wrapperspb.Bool(false)},
			name:     "cluster.c.upstream_rq_200",
			wantName: "cluster.c.upstream_rq_200",
			wantTags: []string{},
		},
		"one default by its envoy name": {
			cfg: &metricsv3.StatsConfig{UseAllDefaultTags: wrapperspb.Bool(false),
				StatsTags: []*metricsv3.TagSpecifier{{TagName: "envoy.cluster_name"}}},
			name:     "cluster.c.upstream_rq_200",
			wantName: "cluster.upstream_rq_200",
			wantTags: []string{"proxy.cluster_name=c"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := NewTagProducer(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, tags := p.ExtractString(tc.name)
			if got != tc.wantName {
				t.Errorf("name %q, want %q", got, tc.wantName)
			}
			if diff := cmp.Diff(tc.wantTags, tagMap(tags)); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
		})
	}
}

// allExtractors returns a copy of p that tries every extractor on every
// name, as Extract did before it dispatched on the name's first segment.
func allExtractors(p *TagProducer) *TagProducer {
	q := *p
	q.byHead = nil
	q.headless = nil
	for i := range q.extractors {
		q.headless = append(q.headless, i)
	}
	return &q
}

// FuzzTagExtraction checks that any name extracts without panicking, that
// every tag value and every kept byte comes from the name, that tag names
// are unique, and that dispatching on the first segment changes nothing.
func FuzzTagExtraction(f *testing.F) {
	for _, s := range []string{"cluster.c.upstream_rq_200", "listener.0.0.0.0_1.worker_0.x", "http.a.rds.b.c.d", "", ".", "a..b", "vhost.v.route.r.x_rq_5xx", "auth.clientssl.p.x", "pfx.http_local_rate_limit.x"} {
		f.Add(s)
	}
	p, err := NewTagProducer(nil)
	if err != nil {
		f.Fatal(err)
	}
	// A configured regex extractor has no prefix: it must be tried on
	// every name, before the defaults.
	configured, err := NewTagProducer(&metricsv3.StatsConfig{StatsTags: []*metricsv3.TagSpecifier{
		{TagName: "tenant", TagValue: &metricsv3.TagSpecifier_Regex{Regex: `^(?:cluster|x)\.((.+?)-)`}},
		{TagName: "envoy.cluster_name"},
	}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("x.acme-web.y")
	f.Add("cluster.acme-web.upstream_rq_200")
	f.Fuzz(func(t *testing.T, name string) {
		for _, q := range []*TagProducer{p, configured} {
			got, tags := q.ExtractString(name)
			wantName, wantTags := allExtractors(q).ExtractString(name)
			if got != wantName || !cmp.Equal(tagMap(tags), tagMap(wantTags)) {
				t.Fatalf("%q: dispatched extraction %q %v, trying every extractor %q %v", name, got, tagMap(tags), wantName, tagMap(wantTags))
			}
		}
		got, tags := p.ExtractString(name)
		if len(got) > len(name) {
			t.Fatalf("extracted name %q longer than %q", got, name)
		}
		seen := map[string]bool{}
		for _, tg := range tags {
			if seen[tg.Name] {
				t.Fatalf("tag %s twice", tg.Name)
			}
			seen[tg.Name] = true
			if !strings.Contains(name, string(tg.Value)) {
				t.Fatalf("tag value %q not in %q", tg.Value, name)
			}
		}
	})
}

// FuzzFastExtractors checks that the default extractors matched without
// the regex engine (the "^prefix((value)\.)" ones and those of
// fastMatchers) agree with their regex on any name.
func FuzzFastExtractors(f *testing.F) {
	for _, s := range []string{
		"cluster.c.x", "cluster..x", "cluster.c", "http.a.b", "tcp.", "vhost.v.", "clusterx.c.d",
		"cluster.c.upstream_rq_200", "x_rq_2000", "_rq_20", "a_rq_5xx", "a_rq_xxx", "a_rq_55xx",
		"listener.0.0.0.0_80.x", "listener.1.2.3.4_5", "listener.1.2.3_4.x", "listener.[::1]_80.x",
		"listener.[a.b]_8.x", "listener.[::1]_.x", "listener..x", "listener.admin.x", "listener.1.2.3.4_5_6.x",
		"listener.a.http.hcm.rq", "listener.a.http..http.b.x", "listener..http.h.", "listener.a\n.http.h.x",
		"listener.a.http.h", "listener.1.2.3.4_80.worker_3.x", "listener.a.worker_.worker_1.x",
		"server.worker_0.watchdog_miss", "listener_manager.worker_12.x", "server.worker_1", "listener.\n.worker_1.x",
	} {
		f.Add(s)
	}
	var fast []tagExtractor
	for _, d := range defaultExtractors {
		x, err := d.compile()
		if err != nil {
			f.Fatal(err)
		}
		if x.tokenized || x.fast != nil {
			fast = append(fast, x)
		}
	}
	if len(fast) < len(fastMatchers)+10 {
		f.Fatalf("only %d extractors avoid the regex engine", len(fast))
	}
	f.Fuzz(func(t *testing.T, name string) {
		b := []byte(name)
		for _, x := range fast {
			if !hasPrefix(b, x.prefix) {
				continue // Extract checks the prefix before matching
			}
			rs, re, vs, ve, ok := x.match(b)
			x.tokenized, x.fast = false, nil
			rs2, re2, vs2, ve2, ok2 := x.match(b)
			if ok != ok2 || (ok && (rs != rs2 || re != re2 || vs != vs2 || ve != ve2)) {
				t.Fatalf("%s on %q: fast %v %d %d %d %d, regex %v %d %d %d %d", x.name, name, ok, rs, re, vs, ve, ok2, rs2, re2, vs2, ve2)
			}
		}
	})
}
