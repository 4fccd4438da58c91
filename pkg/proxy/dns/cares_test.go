package dns

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// addrs renders a result's addresses as "ip/ttl" strings.
func addrs(r Result) []string {
	out := []string{}
	for _, a := range r.Addresses {
		out = append(out, a.IP.String()+"/"+a.TTL.String())
	}
	return out
}

func TestCaresFamilies(t *testing.T) {
	ts := startServer(t)
	ts.set(t,
		"both.test. 30 IN A 10.0.0.1",
		"both.test. 40 IN A 10.0.0.2",
		"both.test. 50 IN AAAA fd00::1",
		"v4.test. 60 IN A 10.0.0.3",
		"v6.test. 70 IN AAAA fd00::2",
	)
	tests := []struct {
		name, host string
		family     Family
		want       []string
		// lookups is how many c-ares lookups the family takes
		// (resolve_total), and notFound how many came back empty.
		lookups, notFound int64
	}{
		{"V4_ONLY", "both.test", V4Only, []string{"10.0.0.1/30s", "10.0.0.2/40s"}, 1, 0},
		{"V6_ONLY", "both.test", V6Only, []string{"fd00::1/50s"}, 1, 0},
		{"AUTO prefers IPv6", "both.test", Auto, []string{"fd00::1/50s"}, 1, 0},
		{"AUTO falls back to IPv4", "v4.test", Auto, []string{"10.0.0.3/1m0s"}, 2, 1},
		{"V4_PREFERRED prefers IPv4", "both.test", V4Preferred, []string{"10.0.0.1/30s", "10.0.0.2/40s"}, 1, 0},
		{"V4_PREFERRED falls back to IPv6", "v6.test", V4Preferred, []string{"fd00::2/1m10s"}, 2, 1},
		{"ALL returns both, A first", "both.test", All, []string{"10.0.0.1/30s", "10.0.0.2/40s", "fd00::1/50s"}, 1, 0},
		{"ALL with one family", "v6.test", All, []string{"fd00::2/1m10s"}, 1, 0},
		{"V6_ONLY without AAAA", "v4.test", V6Only, []string{}, 1, 1},
		{"final dot", "both.test.", V4Only, []string{"10.0.0.1/30s", "10.0.0.2/40s"}, 1, 0},
		{"any case", "BoTh.TeSt", V6Only, []string{"fd00::1/50s"}, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, st := testEnv(t, "")
			r := NewCares(fastOptions(ts), env).Resolve(context.Background(), tc.host, tc.family)
			if r.Status != Completed {
				t.Fatalf("status %v (%s), want Completed", r.Status, r.Details)
			}
			if diff := cmp.Diff(tc.want, addrs(r)); diff != "" {
				t.Errorf("addresses (-want +got):\n%s", diff)
			}
			c := counters(st)
			if c["resolve_total"] != tc.lookups || c["not_found"] != tc.notFound || c["pending_resolutions"] != 0 {
				t.Errorf("stats %v, want resolve_total %d, not_found %d, nothing pending", c, tc.lookups, tc.notFound)
			}
		})
	}
}

func TestCaresNameErrors(t *testing.T) {
	ts := startServer(t)
	ts.set(t, "exists.test. 30 IN TXT \"no address\"")
	tests := []struct {
		name, host string
		family     Family
	}{
		{"NXDOMAIN", "missing.test", V4Only},
		{"NODATA", "exists.test", V4Only},
		{"NXDOMAIN with AUTO", "missing.test", Auto},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, st := testEnv(t, "")
			r := NewCares(fastOptions(ts), env).Resolve(context.Background(), tc.host, tc.family)
			// Envoy's c-ares resolver completes without addresses: a
			// STRICT_DNS cluster then has no hosts for the name.
			if r.Status != Completed || len(r.Addresses) != 0 {
				t.Fatalf("got %v %v (%s), want Completed without addresses", r.Status, addrs(r), r.Details)
			}
			c := counters(st)
			if c["not_found"] != c["resolve_total"] || c["get_addr_failure"] != 0 {
				t.Errorf("stats %v: every lookup should count as not_found", c)
			}
		})
	}
}

func TestCaresFailures(t *testing.T) {
	ts := startServer(t)
	ts.set(t, "a.test. 30 IN A 10.0.0.1")
	tests := []struct {
		name      string
		mode      serverMode
		counter   string
		wantValue int64
		// queries is how many the server must receive: every attempt
		// (2 tries of the one nameserver) unless the first ends it.
		queries int
	}{
		{"no answer: timeouts", answerNothing, "timeouts", 2, 2},
		{"SERVFAIL", answerServFail, "get_addr_failure", 1, 2},
		{"REFUSED", answerRefused, "get_addr_failure", 1, 2},
		{"garbage with the query's ID", answerGarbageWithID, "get_addr_failure", 1, 2},
		{"garbage too short for a header is ignored: timeouts", answerGarbage, "timeouts", 2, 2},
		{"an answer to another question", answerWrongQuestion, "get_addr_failure", 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts.mode.Store(int32(tc.mode))
			defer ts.mode.Store(int32(answerNormally))
			before := len(ts.seen())
			env, st := testEnv(t, "")
			start := time.Now()
			r := NewCares(fastOptions(ts), env).Resolve(context.Background(), "a.test", V4Only)
			took := time.Since(start)
			if r.Status != Failed || len(r.Addresses) != 0 {
				t.Fatalf("got %v %v, want Failed without addresses", r.Status, addrs(r))
			}
			c := counters(st)
			if c[tc.counter] != tc.wantValue || c["resolve_total"] != 1 {
				t.Errorf("stats %v, want %s = %d and one resolution", c, tc.counter, tc.wantValue)
			}
			if got := len(ts.seen()) - before; got != tc.queries {
				t.Errorf("server saw %d queries, want %d", got, tc.queries)
			}
			// Bounded by tries x timeout (2 x 150 ms), with room for a
			// loaded machine.
			if took > 3*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
}

func TestCaresRefusedServerFailsFast(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := pc.LocalAddr().String()
	pc.Close()
	env, st := testEnv(t, "")
	o := CaresOptions{Resolvers: []string{closed}, QueryTimeout: 5 * time.Second, QueryTries: 2}
	start := time.Now()
	r := NewCares(o, env).Resolve(context.Background(), "a.test", V4Only)
	if r.Status != Failed {
		t.Fatalf("status %v, want Failed", r.Status)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("a refused query took %v: it should not wait for the timeout", took)
	}
	if c := counters(st); c["get_addr_failure"] != 1 {
		t.Errorf("stats %v, want one get_addr_failure", c)
	}
}

func TestCaresTCP(t *testing.T) {
	ts := startServer(t)
	ts.set(t, "a.test. 30 IN A 10.0.0.1")
	t.Run("use_tcp_for_dns_lookups", func(t *testing.T) {
		before := len(ts.seen())
		env, _ := testEnv(t, "")
		o := fastOptions(ts)
		o.UseTCP = true
		r := NewCares(o, env).Resolve(context.Background(), "a.test", V4Only)
		if diff := cmp.Diff([]string{"10.0.0.1/30s"}, addrs(r)); diff != "" {
			t.Fatalf("addresses (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"tcp A a.test."}, ts.seen()[before:]); diff != "" {
			t.Errorf("queries (-want +got):\n%s", diff)
		}
	})
	t.Run("truncated over UDP, then TCP", func(t *testing.T) {
		ts.mode.Store(int32(answerTruncatedUDP))
		defer ts.mode.Store(int32(answerNormally))
		before := len(ts.seen())
		env, _ := testEnv(t, "")
		r := NewCares(fastOptions(ts), env).Resolve(context.Background(), "a.test", V4Only)
		if diff := cmp.Diff([]string{"10.0.0.1/30s"}, addrs(r)); diff != "" {
			t.Fatalf("addresses (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"udp A a.test.", "tcp A a.test."}, ts.seen()[before:]); diff != "" {
			t.Errorf("queries (-want +got):\n%s", diff)
		}
	})
}

func TestCaresCNAMEChainTTL(t *testing.T) {
	ts := startServer(t)
	ts.set(t,
		"alias.test. 20 IN CNAME real.test.",
		"real.test. 300 IN A 10.0.0.9",
	)
	env, _ := testEnv(t, "")
	r := NewCares(fastOptions(ts), env).Resolve(context.Background(), "alias.test", V4Only)
	// The address lives as long as the shortest record leading to it.
	if diff := cmp.Diff([]string{"10.0.0.9/20s"}, addrs(r)); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
}

func TestCaresLocalNames(t *testing.T) {
	ts := startServer(t)
	tests := []struct {
		name, host string
		family     Family
		want       []string
	}{
		{"IPv4 literal", "192.0.2.7", Auto, []string{"192.0.2.7/0s"}},
		{"IPv6 literal", "fd00::7", V4Preferred, []string{"fd00::7/0s"}},
		{"IPv4 literal, V6_ONLY", "192.0.2.7", V6Only, []string{}},
		{"hosts file", "backend.internal", V4Only, []string{"10.1.1.1/0s"}},
		{"hosts file alias, any case", "BE", Auto, []string{"fd00::1:1/0s"}},
		{"hosts file, ALL", "be", All, []string{"10.1.1.1/0s", "fd00::1:1/0s"}},
		{"localhost from the hosts file", "localhost", V4Only, []string{"127.0.0.2/0s"}},
		{"localhost without a hosts entry", "localhost", V6Only, []string{"::1/0s"}},
		{"a name under localhost", "app.localhost", V4Only, []string{"127.0.0.1/0s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := testEnv(t, "",
				"# comment",
				"10.1.1.1 backend.internal be   # trailing comment",
				"fd00::1:1 be",
				"127.0.0.2 localhost",
				"not-an-ip ignored")
			before := len(ts.seen())
			r := NewCares(fastOptions(ts), env).Resolve(context.Background(), tc.host, tc.family)
			if r.Status != Completed {
				t.Fatalf("status %v (%s)", r.Status, r.Details)
			}
			if diff := cmp.Diff(tc.want, addrs(r)); diff != "" {
				t.Errorf("addresses (-want +got):\n%s", diff)
			}
			if got := ts.seen()[before:]; len(got) != 0 {
				t.Errorf("the DNS was asked %v; local names never reach it", got)
			}
		})
	}
}

func TestCaresSearchDomains(t *testing.T) {
	ts := startServer(t)
	ts.set(t, "svc.ns.cluster.test. 30 IN A 10.0.0.5", "svc. 30 IN A 10.9.9.9")
	conf := "nameserver 127.0.0.1\nsearch ns.cluster.test cluster.test\noptions ndots:2\n"
	t.Run("fewer dots than ndots: search domains first", func(t *testing.T) {
		env, _ := testEnv(t, conf)
		before := len(ts.seen())
		r := NewCares(fastOptions(ts), env).Resolve(context.Background(), "svc", V4Only)
		if diff := cmp.Diff([]string{"10.0.0.5/30s"}, addrs(r)); diff != "" {
			t.Errorf("addresses (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"udp A svc.ns.cluster.test."}, ts.seen()[before:]); diff != "" {
			t.Errorf("queries (-want +got):\n%s", diff)
		}
	})
	t.Run("not found anywhere: every candidate, the name last", func(t *testing.T) {
		env, _ := testEnv(t, conf)
		before := len(ts.seen())
		r := NewCares(fastOptions(ts), env).Resolve(context.Background(), "nope", V4Only)
		if r.Status != Completed || len(r.Addresses) != 0 {
			t.Fatalf("got %v %v", r.Status, addrs(r))
		}
		want := []string{"udp A nope.ns.cluster.test.", "udp A nope.cluster.test.", "udp A nope."}
		if diff := cmp.Diff(want, ts.seen()[before:]); diff != "" {
			t.Errorf("queries (-want +got):\n%s", diff)
		}
	})
	t.Run("no_default_search_domain", func(t *testing.T) {
		env, _ := testEnv(t, conf)
		o := fastOptions(ts)
		o.NoSearch = true
		before := len(ts.seen())
		r := NewCares(o, env).Resolve(context.Background(), "svc", V4Only)
		if diff := cmp.Diff([]string{"10.9.9.9/30s"}, addrs(r)); diff != "" {
			t.Errorf("addresses (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"udp A svc."}, ts.seen()[before:]); diff != "" {
			t.Errorf("queries (-want +got):\n%s", diff)
		}
	})
}

func TestCaresNameservers(t *testing.T) {
	tests := []struct {
		name       string
		resolvConf string
		opts       CaresOptions
		want       []string
	}{
		{"system nameservers", "nameserver 192.0.2.1\nnameserver fd00::53\n", CaresOptions{}, []string{"192.0.2.1:53", "[fd00::53]:53"}},
		{"c-ares default without any", "# empty\n", CaresOptions{}, []string{"127.0.0.1:53"}},
		{"resolvers replace the system's", "nameserver 192.0.2.1\n", CaresOptions{Resolvers: []string{"127.0.0.1:5353"}}, []string{"127.0.0.1:5353"}},
		{"fallback unused when the system has some", "nameserver 192.0.2.1\n", CaresOptions{Resolvers: []string{"127.0.0.1:5353"}, UseResolversAsFallback: true}, []string{"192.0.2.1:53"}},
		{"fallback used when the system has none", "", CaresOptions{Resolvers: []string{"127.0.0.1:5353"}, UseResolversAsFallback: true}, []string{"127.0.0.1:5353"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := testEnv(t, tc.resolvConf)
			if diff := cmp.Diff(tc.want, NewCares(tc.opts, env).Servers()); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCaresNextServerAndRotate(t *testing.T) {
	bad, good := startServer(t), startServer(t)
	bad.mode.Store(int32(answerServFail))
	good.set(t, "a.test. 30 IN A 10.0.0.1")
	env, _ := testEnv(t, "")
	o := CaresOptions{Resolvers: []string{bad.addr, good.addr}, QueryTimeout: 150 * time.Millisecond, QueryTries: 1}
	r := NewCares(o, env).Resolve(context.Background(), "a.test", V4Only)
	if diff := cmp.Diff([]string{"10.0.0.1/30s"}, addrs(r)); diff != "" {
		t.Fatalf("a SERVFAIL moves on to the next nameserver (-want +got):\n%s", diff)
	}

	bad.mode.Store(int32(answerNormally))
	bad.set(t, "a.test. 30 IN A 10.0.0.1")
	o.Rotate = true
	c := NewCares(o, env)
	b0, g0 := len(bad.seen()), len(good.seen())
	for range 4 {
		c.Resolve(context.Background(), "a.test", V4Only)
	}
	if b, g := len(bad.seen())-b0, len(good.seen())-g0; b != 2 || g != 2 {
		t.Errorf("rotate_nameservers: %d and %d queries, want 2 each", b, g)
	}
}

func TestCaresFilterUnroutableFamilies(t *testing.T) {
	ts := startServer(t)
	ts.set(t, "both.test. 30 IN A 10.0.0.1", "both.test. 30 IN AAAA fd00::1")
	env, st := testEnv(t, "")
	env.Families = func() (bool, bool) { return true, false } // no IPv6 interface
	o := fastOptions(ts)
	o.FilterUnroutableFamilies = true
	c := NewCares(o, env)
	if got := addrs(c.Resolve(context.Background(), "both.test", All)); !slices.Equal(got, []string{"10.0.0.1/30s"}) {
		t.Errorf("ALL: %v, want the IPv4 address only", got)
	}
	if got := addrs(c.Resolve(context.Background(), "both.test", Auto)); !slices.Equal(got, []string{"10.0.0.1/30s"}) {
		t.Errorf("AUTO: %v, want the IPv4 address (IPv6 filtered, then IPv4)", got)
	}
	r := c.Resolve(context.Background(), "both.test", V6Only)
	if r.Status != Failed {
		t.Errorf("V6_ONLY: %v, want Failed (family filtered)", r.Status)
	}
	if n := counters(st)["get_addr_failure"]; n != 2 {
		t.Errorf("get_addr_failure %d, want 2 (the filtered IPv6 lookups)", n)
	}
}

func TestCaresCancel(t *testing.T) {
	ts := startServer(t)
	ts.mode.Store(int32(answerNothing))
	env, _ := testEnv(t, "")
	o := CaresOptions{Resolvers: []string{ts.addr}, QueryTimeout: 30 * time.Second, QueryTries: 4}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result)
	go func() { done <- NewCares(o, env).Resolve(ctx, "a.test", V4Only) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case r := <-done:
		if r.Status != Failed {
			t.Errorf("status %v, want Failed", r.Status)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled resolution did not return")
	}
}

func TestCaresBadNames(t *testing.T) {
	ts := startServer(t)
	env, st := testEnv(t, "")
	c := NewCares(fastOptions(ts), env)
	for _, name := range []string{"", strings.Repeat("a", 64) + ".test", "a..b"} {
		if r := c.Resolve(context.Background(), name, V4Only); r.Status != Failed {
			t.Errorf("%q: %v, want Failed", name, r.Status)
		}
	}
	if n := counters(st)["get_addr_failure"]; n != 3 {
		t.Errorf("get_addr_failure %d, want 3", n)
	}
	if len(ts.seen()) != 0 {
		t.Errorf("bad names reached the server: %v", ts.seen())
	}
}

func TestParseHosts(t *testing.T) {
	got := parseHosts([]byte("127.0.0.1 localhost\n::ffff:10.0.0.1 mapped\n\n# x\n10.0.0.2\tA b\n10.0.0.3 a\n"))
	want := map[string][]netip.Addr{
		"localhost": {netip.MustParseAddr("127.0.0.1")},
		"mapped":    {netip.MustParseAddr("10.0.0.1")},
		"a":         {netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")},
		"b":         {netip.MustParseAddr("10.0.0.2")},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
