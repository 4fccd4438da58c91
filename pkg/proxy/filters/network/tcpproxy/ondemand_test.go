package tcpproxy

import (
	"context"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// fakeOnDemand answers Discover with found, recording the timeout asked.
type fakeOnDemand struct {
	found   bool
	timeout time.Duration
}

func (f *fakeOnDemand) Discover(_ context.Context, _ string, timeout time.Duration) bool {
	f.timeout = timeout
	return f.found
}

func TestCompileOnDemand(t *testing.T) {
	ads := &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}
	file := &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_PathConfigSource{PathConfigSource: &corev3.PathConfigSource{Path: "/c.yaml"}}}
	tests := map[string]struct {
		od       *tcpproxyv3.TcpProxy_OnDemand
		onDemand netfilter.OnDemandClusters
		want     string // the error; "" for none
	}{
		"unset":                {od: nil},
		"without odcds_config": {od: &tcpproxyv3.TcpProxy_OnDemand{Timeout: durationpb.New(time.Second)}},
		"a file":               {od: &tcpproxyv3.TcpProxy_OnDemand{OdcdsConfig: file}, onDemand: &fakeOnDemand{}, want: "on_demand.odcds_config: ads: {} is required"},
		"no delta stream":      {od: &tcpproxyv3.TcpProxy_OnDemand{OdcdsConfig: ads}, want: "on_demand.odcds_config.ads: requires dynamic_resources.ads_config with api_type DELTA_GRPC"},
		"a locator":            {od: &tcpproxyv3.TcpProxy_OnDemand{OdcdsConfig: ads, ResourcesLocator: "xdstp://x"}, onDemand: &fakeOnDemand{}, want: "on_demand.resources_locator: not supported by Outrigger"},
		"zero timeout":         {od: &tcpproxyv3.TcpProxy_OnDemand{OdcdsConfig: ads, Timeout: durationpb.New(0)}, onDemand: &fakeOnDemand{}, want: "on_demand.timeout: must be greater than 0s"},
		"good":                 {od: &tcpproxyv3.TcpProxy_OnDemand{OdcdsConfig: ads}, onDemand: &fakeOnDemand{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			store := stats.NewStore()
			od, err := compileOnDemand(&tcpproxyv3.TcpProxy{StatPrefix: "p", OnDemand: tc.od}, netfilter.Context{Stats: store, OnDemand: tc.onDemand})
			switch {
			case tc.want != "":
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error = %v, want %q", err, tc.want)
				}
			case err != nil:
				t.Fatal(err)
			case tc.onDemand == nil && od != nil:
				t.Fatal("on-demand discovery on without odcds_config")
			case tc.onDemand != nil && od.timeout != defaultOnDemandTimeout:
				t.Fatalf("timeout = %v, want Envoy's default %v", od.timeout, defaultOnDemandTimeout)
			}
		})
	}
}

func TestOnDemandDiscoverCounts(t *testing.T) {
	store := stats.NewStore()
	fake := &fakeOnDemand{}
	ads := &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}
	od, err := compileOnDemand(&tcpproxyv3.TcpProxy{StatPrefix: "p", OnDemand: &tcpproxyv3.TcpProxy_OnDemand{OdcdsConfig: ads, Timeout: durationpb.New(2 * time.Second)}},
		netfilter.Context{Stats: store, OnDemand: fake})
	if err != nil {
		t.Fatal(err)
	}
	if od.discover(context.Background(), "c") {
		t.Fatal("found a cluster the fake does not have")
	}
	fake.found = true
	if !od.discover(context.Background(), "c") {
		t.Fatal("did not find the cluster")
	}
	if fake.timeout != 2*time.Second {
		t.Errorf("timeout asked = %v", fake.timeout)
	}
	for name, want := range map[string]uint64{
		"tcp.p.on_demand_cluster_attempt": 2,
		"tcp.p.on_demand_cluster_timeout": 1,
		"tcp.p.on_demand_cluster_success": 1,
		"tcp.p.on_demand_cluster_missing": 0,
	} {
		if got := store.Counter(name).Value(); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}
