package ondemand

import (
	"context"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	ondemandv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/on_demand/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/grpcservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// services is a server that discovers clusters on demand (or not, when
// discover is nil).
type services struct {
	httpfilter.Services
	discover DiscoverFunc
}

func (s services) OnDemandClusters() DiscoverFunc { return s.discover }

func (services) Cluster(string) grpcservice.Cluster { return nil }

func TestCompile(t *testing.T) {
	found := func(context.Context, string, time.Duration) bool { return true }
	ads := &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}
	for name, tc := range map[string]struct {
		cfg  *ondemandv3.OnDemand
		svc  httpfilter.Services
		want string
	}{
		"no odcds lets requests through": {cfg: &ondemandv3.OnDemand{}},
		"odcds over delta ADS":           {cfg: &ondemandv3.OnDemand{Odcds: &ondemandv3.OnDemandCds{Source: ads}}, svc: services{discover: found}},
		"no delta ADS stream": {
			cfg:  &ondemandv3.OnDemand{Odcds: &ondemandv3.OnDemandCds{Source: ads}},
			svc:  services{},
			want: "odcds.source.ads: requires dynamic_resources.ads_config with api_type DELTA_GRPC",
		},
		"refusals": {
			cfg: &ondemandv3.OnDemand{Odcds: &ondemandv3.OnDemandCds{
				Source:           &corev3.ConfigSource{InitialFetchTimeout: durationpb.New(time.Second)},
				ResourcesLocator: "xdstp://x/envoy.config.cluster.v3.Cluster/a",
				Timeout:          durationpb.New(0),
			}},
			svc: services{discover: found},
			want: "odcds.resources_locator: not supported by Outrigger (no xdstp:// resource locators)\n" +
				"odcds.source: ads: {} is required: Outrigger discovers clusters on demand over the ADS stream only\n" +
				"odcds.source.initial_fetch_timeout: not supported by Outrigger (odcds.timeout bounds the wait)\n" +
				"odcds.timeout: must be greater than 0s",
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := Factory{}.Compile(tc.cfg, httpfilter.Context{Services: tc.svc})
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			case tc.want == "":
				fc := cfg.(*filterConfig)
				if (tc.cfg.GetOdcds() != nil) != (fc.settings.discover != nil) || (fc.settings.discover != nil && fc.settings.timeout != defaultTimeout) {
					t.Errorf("settings %+v", fc.settings)
				}
			}
		})
	}
}
