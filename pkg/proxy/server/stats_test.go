package server

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/internal/golden"
	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/options"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// buildServer builds a server from a YAML bootstrap and command line
// arguments, with a clock the test controls. The bootstrap is loaded but
// not run through the support check: these tests are about the server.
func buildServer(t *testing.T, yaml string, args ...string) (*Server, *fakeClock, error) {
	t.Helper()
	opts, err := options.Parse(append([]string{"--config-yaml", yaml}, args...),
		options.Environment{HardwareThreads: 2})
	if err != nil {
		t.Fatalf("options: %v", err)
	}
	loaded, err := bootstrap.Load(bootstrap.LoadOptions{ConfigYAML: yaml})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	logs, err := logging.New(logging.Config{Level: logging.LevelOff, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logs.Close() })
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	s, err := New(Config{
		Options:       opts,
		Bootstrap:     loaded.Bootstrap,
		UnknownFields: loaded.UnknownFields,
		Extensions:    builtin.Registry(),
		Logs:          logs,
		Now:           clock.now,
	})
	return s, clock, err
}

func mustBuildServer(t *testing.T, yaml string, args ...string) (*Server, *fakeClock) {
	t.Helper()
	s, clock, err := buildServer(t, yaml, args...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(s.stopStats)
	return s, clock
}

// serverStatNames lists the server.* stats with their kinds, one per
// line, in rendering order.
func serverStatNames(t *testing.T, st *stats.Store) []byte {
	t.Helper()
	f, err := stats.NewRE2Filter(`^server\.`)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = st.Visit(stats.VisitOptions{Filter: f}, func(s *stats.Stat) error {
		fmt.Fprintf(&out, "%s %s\n", s.Kind, s.Name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestServerStatNames: the server.* stats of Envoy's list, with their
// kinds, exist from the start.
func TestServerStatNames(t *testing.T) {
	s, _ := mustBuildServer(t, "{}")
	golden.Check(t, filepath.Join("testdata", "server_stats.txt"), serverStatNames(t, s.Store()))
}

func TestServerStatValuesAtStart(t *testing.T) {
	s, _ := mustBuildServer(t, "stats_server_version_override: 4242", "--concurrency", "3", "--restart-epoch", "2")
	st := s.Store()
	gauges := map[string]int64{
		"server.concurrency":                                3,
		"server.hot_restart_epoch":                          2,
		"server.hot_restart_generation":                     1,
		"server.version":                                    4242,
		"server.uptime":                                     0,
		"server.total_connections":                          0,
		"server.parent_connections":                         0,
		"server.days_until_first_cert_expiring":             0,
		"server.seconds_until_first_ocsp_response_expiring": 0,
		"server.state":                                      2, // PRE_INITIALIZING
		"server.live":                                       1,
	}
	for name, want := range gauges {
		if got := st.Gauge(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	for _, name := range []string{"server.memory_allocated", "server.memory_heap_size", "server.memory_physical_size"} {
		if got := st.Gauge(name).Value(); got <= 0 {
			t.Errorf("%s = %d, want the process's figure", name, got)
		}
	}
	if got := st.Counter("server.static_unknown_fields").Value(); got != 0 {
		t.Errorf("static_unknown_fields = %d", got)
	}
}

func TestHotRestartGenerationOnlyWithHotRestart(t *testing.T) {
	s, _ := mustBuildServer(t, "{}", "--disable-hot-restart")
	if bytes.Contains(serverStatNames(t, s.Store()), []byte("hot_restart_generation")) {
		t.Error("server.hot_restart_generation exists with --disable-hot-restart")
	}
}

func TestServerVersion(t *testing.T) {
	cases := map[string]struct {
		override   uint64
		overridden bool
		build      string
		want       uint64
	}{
		"revision":               {build: "a1b2c3d4e5/1.0.0/Clean/RELEASE/GoTLS", want: 0xa1b2c3},
		"no revision":            {build: "0000000000000000000000000000000000000000/1.0.0/Clean/RELEASE/GoTLS", want: 0},
		"override":               {override: 7, overridden: true, build: "a1b2c3d4e5/1.0.0", want: 7},
		"override to zero":       {override: 0, overridden: true, build: "a1b2c3d4e5/1.0.0", want: 0},
		"short revision":         {build: "abc/1.0.0", want: 0},
		"revision that is bogus": {build: "zzzzzzzz/1.0.0", want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := serverVersion(tc.override, tc.overridden, tc.build); got != tc.want {
				t.Errorf("serverVersion = %#x, want %#x", got, tc.want)
			}
		})
	}
}

// TestServerStatsRefreshAtFlush: the changing gauges are refreshed by a
// flush, and only then.
func TestServerStatsRefreshAtFlush(t *testing.T) {
	s, clock := mustBuildServer(t, "stats_flush_on_admin: true")
	st := s.Store()
	s.AddConnectionSource(func() int64 { return 3 })
	s.AddConnectionSource(func() int64 { return 4 })
	// The gauges are looked up first: every lookup by name counts in
	// stats_recent_lookups.
	uptime, conns, lookups := st.Gauge("server.uptime"), st.Gauge("server.total_connections"), st.Gauge("server.stats_recent_lookups")
	clock.t = clock.t.Add(90 * time.Second)
	if got := uptime.Value(); got != 0 {
		t.Errorf("uptime before the flush = %d, want 0", got)
	}
	s.FlushForAdmin()
	_, total, _ := st.RecentLookups()
	if got := lookups.Value(); got != int64(total) || got == 0 {
		t.Errorf("stats_recent_lookups = %d, want %d (and not 0)", got, total)
	}
	if got := uptime.Value(); got != 90 {
		t.Errorf("uptime = %d, want 90", got)
	}
	if got := conns.Value(); got != 7 {
		t.Errorf("total_connections = %d, want 7", got)
	}
}

func TestFlushForAdminOnlyWithFlushOnAdmin(t *testing.T) {
	s, clock := mustBuildServer(t, "stats_flush_interval: 1s")
	clock.t = clock.t.Add(time.Minute)
	s.FlushForAdmin()
	if got := s.Store().Gauge("server.uptime").Value(); got != 0 {
		t.Errorf("FlushForAdmin flushed without stats_flush_on_admin: uptime %d", got)
	}
	if got := s.StatsFlushInterval(); got != time.Second {
		t.Errorf("StatsFlushInterval = %v, want 1s", got)
	}
}

func TestFilterUsesRE2(t *testing.T) {
	runtimeYAML := func(value string) string {
		return `layered_runtime: {layers: [{name: static, static_layer: {proxy.reloadable_features.admin_stats_filter_use_re2: ` +
			value + `}}, {name: admin, admin_layer: {}}]}`
	}
	cases := map[string]struct {
		yaml   string
		modify map[string]string
		want   bool
	}{
		"default":                    {yaml: "{}", want: true},
		"static false":               {yaml: runtimeYAML("false"), want: false},
		"static true":                {yaml: runtimeYAML("true"), want: true},
		"switched off at runtime":    {yaml: runtimeYAML("true"), modify: map[string]string{FilterRE2RuntimeKey: "false"}, want: false},
		"override removed":           {yaml: runtimeYAML("false"), modify: map[string]string{FilterRE2RuntimeKey: "true"}, want: true},
		"not a boolean: the default": {yaml: runtimeYAML("maybe"), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := mustBuildServer(t, tc.yaml)
			if tc.modify != nil {
				if err := s.ModifyRuntime(tc.modify); err != nil {
					t.Fatal(err)
				}
			}
			if got := s.FilterUsesRE2(); got != tc.want {
				t.Errorf("FilterUsesRE2 = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStatsConfigErrors(t *testing.T) {
	cases := map[string]struct {
		yaml string
		args []string
		want []string
	}{
		"bad tag regex": {
			yaml: `stats_config: {stats_tags: [{tag_name: t, regex: "("}]}`,
			want: []string{"stats_config.stats_tags[0]: "},
		},
		"tag given twice": {
			yaml: `stats_config: {stats_tags: [{tag_name: team, fixed_value: a}]}`,
			args: []string{"--stats-tag", "team:b"},
			want: []string{`stats_config.stats_tags[0].tag_name: tag name "team" is also given with --stats-tag`},
		},
		"flush interval and on admin": {
			yaml: `{stats_flush_interval: 1s, stats_flush_on_admin: true}`,
			want: []string{"stats_flush_on_admin: only one of stats_flush_interval and stats_flush_on_admin may be set"},
		},
		"unknown tcp cluster": {
			yaml: `stats_sinks: [{name: s, typed_config: {"@type": type.googleapis.com/envoy.config.metrics.v3.StatsdSink, tcp_cluster_name: nowhere}}]`,
			want: []string{`stats_sinks[0].typed_config.tcp_cluster_name: unknown cluster "nowhere"`},
		},
		"two dashboard sinks": {
			yaml: `stats_sinks: [{name: a, typed_config: {"@type": type.googleapis.com/envoy.config.metrics.v3.HystrixSink}},
			                      {name: b, typed_config: {"@type": type.googleapis.com/envoy.config.metrics.v3.HystrixSink}}]`,
			want: []string{"stats_sinks[1].typed_config.only one circuit-breaker dashboard sink may be configured"},
		},
		"every error at once": {
			yaml: `{stats_config: {stats_tags: [{tag_name: ""}]}, stats_flush_interval: 1s, stats_flush_on_admin: true}`,
			want: []string{"stats_config.stats_tags[0]: tag_name is empty", "stats_flush_on_admin: only one"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, _, err := buildServer(t, tc.yaml, tc.args...)
			if err == nil {
				s.stopStats()
				t.Fatalf("New succeeded, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestStatsTags: --stats-tag values come first, then the configuration's
// fixed tags, then extracted ones.
func TestStatsTags(t *testing.T) {
	s, _ := mustBuildServer(t, `stats_config: {stats_tags: [{tag_name: zone, fixed_value: eu-1}]}`,
		"--stats-tag", "team:edge", "--stats-tag", "tier:1")
	name, tags := s.Store().TagProducer().ExtractString("cluster.c1.upstream_rq_total")
	var got []string
	for _, tg := range tags {
		got = append(got, tg.Name+"="+string(tg.Value))
	}
	want := []string{"team=edge", "tier=1", "zone=eu-1", "proxy.cluster_name=c1"}
	if name != "cluster.upstream_rq_total" || !slices.Equal(got, want) {
		t.Errorf("extracted %q %v, want cluster.upstream_rq_total %v", name, got, want)
	}
}

// TestStopStatsFlushesOnce: shutdown sends a last flush to the sinks
// (with the timer in use), then closes them.
func TestStopStatsFlushesOnce(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	port := pc.LocalAddr().(*net.UDPAddr).Port
	s, _ := mustBuildServer(t, fmt.Sprintf(`{stats_flush_interval: 60s, stats_sinks: [{name: s, typed_config: {
		"@type": type.googleapis.com/envoy.config.metrics.v3.StatsdSink,
		address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}`, port))
	s.startStats()
	s.Store().Counter("final.count").Add(5)
	s.stopStats()
	s.stopStats() // a second stop does nothing

	var all string
	buf := make([]byte, 65536)
	for !strings.Contains(all, "proxy.final.count:5|c") {
		_ = pc.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			t.Fatalf("no final flush: %v (got %q)", err, all)
		}
		all += string(buf[:n]) + "\n"
	}
	if !strings.Contains(all, "proxy.server.initialization_time_ms:") {
		t.Errorf("the initialization time was not recorded: %q", all)
	}
}
