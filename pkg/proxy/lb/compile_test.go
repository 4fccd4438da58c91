package lb

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	leastrequestv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	maglevv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/maglev/v3"
	randomv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/random/v3"
	ringhashv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	roundrobinv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// testRegistry has the five policies, as builtin registers them.
func testRegistry(t *testing.T) *extension.Registry {
	t.Helper()
	r, err := extension.New(
		extension.Of(LeastRequestName, Category, &leastrequestv3.LeastRequest{}, LeastRequestFactory{}),
		extension.Of(MaglevName, Category, &maglevv3.Maglev{}, MaglevFactory{}),
		extension.Of(RandomName, Category, &randomv3.Random{}, RandomFactory{}),
		extension.Of(RingHashName, Category, &ringhashv3.RingHash{}, RingHashFactory{}),
		extension.Of(RoundRobinName, Category, &roundrobinv3.RoundRobin{}, RoundRobinFactory{}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestForCluster(t *testing.T) {
	const typed = "type.googleapis.com/envoy.extensions.load_balancing_policies."
	tests := map[string]struct {
		yaml string
		want Policy
		errs []string
	}{
		"default round robin": {yaml: `{name: c}`, want: roundRobinPolicy{}},
		"round robin with slow start": {
			yaml: `{name: c, round_robin_lb_config: {slow_start_config: {slow_start_window: 30s, aggression: {default_value: 2, runtime_key: ss.aggr}, min_weight_percent: {value: 25}}}}`,
			want: roundRobinPolicy{slowStart: &slowStart{window: 30 * time.Second, aggression: runtimeDouble{key: "ss.aggr", def: 2}, minWeight: 0.25}},
		},
		"a window under a millisecond turns slow start off": {
			yaml: `{name: c, round_robin_lb_config: {slow_start_config: {slow_start_window: 0.0001s}}}`,
			want: roundRobinPolicy{},
		},
		"least request defaults": {yaml: `{name: c, lb_policy: LEAST_REQUEST}`, want: leastRequestPolicy{choices: 2, bias: runtimeDouble{def: 1}}},
		"least request": {
			yaml: `{name: c, lb_policy: LEAST_REQUEST, least_request_lb_config: {choice_count: 3, active_request_bias: {default_value: 0.5, runtime_key: lr.bias}, slow_start_config: {slow_start_window: 1s}}}`,
			want: leastRequestPolicy{choices: 3, bias: runtimeDouble{key: "lr.bias", def: 0.5},
				slowStart: &slowStart{window: time.Second, aggression: runtimeDouble{def: 1}, minWeight: 0.1}},
		},
		"random":             {yaml: `{name: c, lb_policy: RANDOM}`, want: randomPolicy{}},
		"ring hash defaults": {yaml: `{name: c, lb_policy: RING_HASH}`, want: ringHashPolicy{minSize: 1024, maxSize: 8 << 20}},
		"ring hash": {
			yaml: `{name: c, lb_policy: RING_HASH, ring_hash_lb_config: {minimum_ring_size: 64, maximum_ring_size: 128, hash_function: MURMUR_HASH_2}, common_lb_config: {consistent_hashing_lb_config: {use_hostname_for_hashing: true}}}`,
			want: ringHashPolicy{minSize: 64, maxSize: 128, murmur: true, useHostname: true},
		},
		"maglev": {yaml: `{name: c, lb_policy: MAGLEV, maglev_lb_config: {table_size: 7}}`, want: maglevPolicy{tableSize: 7}},
		"bad values": {
			yaml: `{name: c, lb_policy: MAGLEV, maglev_lb_config: {table_size: 9}, common_lb_config: {consistent_hashing_lb_config: {hash_balance_factor: 120}}}`,
			errs: []string{
				"maglev_lb_config.table_size: The table size of maglev must be prime number (9 is not)",
			},
		},
		"typed: the first policy Outrigger has": {
			yaml: `{name: c, lb_policy: RING_HASH, load_balancing_policy: {policies: [
			  {typed_extension_config: {name: other, typed_config: {"@type": type.googleapis.com/google.protobuf.Empty}}},
			  {typed_extension_config: {name: lr, typed_config: {"@type": ` + typed + `least_request.v3.LeastRequest, choice_count: 4, selection_method: FULL_SCAN}}},
			  {typed_extension_config: {name: rr, typed_config: {"@type": ` + typed + `round_robin.v3.RoundRobin}}}]}}`,
			want: leastRequestPolicy{choices: 4, fullScan: true, bias: runtimeDouble{def: 1}},
		},
		"typed ring hash": {
			yaml: `{name: c, load_balancing_policy: {policies: [{typed_extension_config: {name: rh, typed_config: {"@type": ` + typed + `ring_hash.v3.RingHash, hash_function: MURMUR_HASH_2, minimum_ring_size: 16, consistent_hashing_lb_config: {use_hostname_for_hashing: true}}}}]}}`,
			want: ringHashPolicy{minSize: 16, maxSize: 8 << 20, murmur: true, useHostname: true},
		},
		"typed maglev refusals": {
			yaml: `{name: c, common_lb_config: {consistent_hashing_lb_config: {}}, load_balancing_policy: {policies: [{typed_extension_config: {name: m, typed_config: {"@type": ` + typed + `maglev.v3.Maglev, table_size: 10}}}]}}`,
			errs: []string{
				"common_lb_config.consistent_hashing_lb_config: cannot be combined with load_balancing_policy (configure it in the policy's typed config)",
				"load_balancing_policy.policies[0].typed_extension_config.typed_config.table_size: The table size of maglev must be prime number (10 is not)",
			},
		},
		"typed ring hash: a bad hash_policy": {
			yaml: `{name: c, load_balancing_policy: {policies: [{typed_extension_config: {name: rh, typed_config: {"@type": ` + typed + `ring_hash.v3.RingHash, consistent_hashing_lb_config: {hash_policy: [{header: {header_name: x-user}}, {header: {header_name: ""}}]}}}}]}}`,
			errs: []string{
				"load_balancing_policy.policies[0].typed_extension_config.typed_config.consistent_hashing_lb_config.hash_policy[1].header.header_name: required",
			},
		},
		"LOAD_BALANCING_POLICY_CONFIG without a policy": {
			yaml: `{name: c, lb_policy: LOAD_BALANCING_POLICY_CONFIG}`,
			errs: []string{"load_balancing_policy: required when lb_policy is LOAD_BALANCING_POLICY_CONFIG"},
		},
	}
	reg := testRegistry(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			j, err := yaml.YAMLToJSON([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			c := &clusterv3.Cluster{}
			if err := protojson.Unmarshal(j, c); err != nil {
				t.Fatal(err)
			}
			p, errs := ForCluster(c, reg)
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.errs, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if tc.errs != nil {
				return
			}
			if diff := cmp.Diff(tc.want, p, cmp.AllowUnexported(roundRobinPolicy{}, leastRequestPolicy{}, randomPolicy{}, ringHashPolicy{}, maglevPolicy{}, slowStart{}, runtimeDouble{})); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLegacyConfigIgnored(t *testing.T) {
	for yml, want := range map[string]string{
		`{lb_policy: RING_HASH, ring_hash_lb_config: {}}`: "",
		`{lb_policy: ROUND_ROBIN, maglev_lb_config: {}}`:  "maglev_lb_config",
		`{}`: "",
		`{least_request_lb_config: {}, load_balancing_policy: {policies: []}}`: "least_request_lb_config",
	} {
		j, _ := yaml.YAMLToJSON([]byte(yml))
		c := &clusterv3.Cluster{}
		if err := protojson.Unmarshal(j, c); err != nil {
			t.Fatal(err)
		}
		if got := LegacyConfigIgnored(c); got != want {
			t.Errorf("%s: %q, want %q", yml, got, want)
		}
	}
}

// TestHashPolicyOf checks that a typed ring hash or maglev policy keeps
// its consistent_hashing_lb_config.hash_policy, and that the others have
// none.
func TestHashPolicyOf(t *testing.T) {
	const typed = "type.googleapis.com/envoy.extensions.load_balancing_policies."
	for name, tc := range map[string]struct {
		yaml string
		want bool
	}{
		"ring hash":          {`{name: c, load_balancing_policy: {policies: [{typed_extension_config: {name: rh, typed_config: {"@type": ` + typed + `ring_hash.v3.RingHash, consistent_hashing_lb_config: {hash_policy: [{header: {header_name: x-user}}]}}}}]}}`, true},
		"maglev":             {`{name: c, load_balancing_policy: {policies: [{typed_extension_config: {name: m, typed_config: {"@type": ` + typed + `maglev.v3.Maglev, consistent_hashing_lb_config: {hash_policy: [{connection_properties: {source_ip: true}}]}}}}]}}`, true},
		"maglev without one": {`{name: c, load_balancing_policy: {policies: [{typed_extension_config: {name: m, typed_config: {"@type": ` + typed + `maglev.v3.Maglev, consistent_hashing_lb_config: {use_hostname_for_hashing: true}}}}]}}`, false},
		"legacy ring hash":   {`{name: c, lb_policy: RING_HASH}`, false},
		"round robin":        {`{name: c}`, false},
	} {
		t.Run(name, func(t *testing.T) {
			p := compileCluster(t, tc.yaml)
			if got := HashPolicyOf(p) != nil; got != tc.want {
				t.Errorf("HashPolicyOf: %v, want %v", got, tc.want)
			}
		})
	}
}

// TestLocalityOf checks that the typed round robin, least request and
// random policies keep their locality_lb_config.
func TestLocalityOf(t *testing.T) {
	const typed = "type.googleapis.com/envoy.extensions.load_balancing_policies."
	for name, tc := range map[string]struct {
		yaml     string
		weighted bool
		zone     float64 // routing_enabled, -1 for no zone_aware_lb_config
	}{
		"round robin, locality weighted": {`{name: c, load_balancing_policy: {policies: [{typed_extension_config: {name: rr, typed_config: {"@type": ` + typed + `round_robin.v3.RoundRobin, locality_lb_config: {locality_weighted_lb_config: {}}}}}]}}`, true, -1},
		"least request, zone aware":      {`{name: c, load_balancing_policy: {policies: [{typed_extension_config: {name: lr, typed_config: {"@type": ` + typed + `least_request.v3.LeastRequest, locality_lb_config: {zone_aware_lb_config: {routing_enabled: {value: 40}}}}}}]}}`, false, 40},
		"random, zone aware":             {`{name: c, load_balancing_policy: {policies: [{typed_extension_config: {name: r, typed_config: {"@type": ` + typed + `random.v3.Random, locality_lb_config: {zone_aware_lb_config: {routing_enabled: {value: 7}}}}}}]}}`, false, 7},
	} {
		t.Run(name, func(t *testing.T) {
			p := compileCluster(t, tc.yaml)
			l := LocalityOf(p)
			if l == nil {
				t.Fatal("no locality_lb_config")
			}
			if got := l.GetLocalityWeightedLbConfig() != nil; got != tc.weighted {
				t.Errorf("locality weighted: %v, want %v", got, tc.weighted)
			}
			if tc.zone >= 0 && l.GetZoneAwareLbConfig().GetRoutingEnabled().GetValue() != tc.zone {
				t.Errorf("routing_enabled: %v, want %v", l.GetZoneAwareLbConfig().GetRoutingEnabled().GetValue(), tc.zone)
			}
		})
	}
	if LocalityOf(ringHashPolicy{}) != nil {
		t.Error("ring hash has a locality_lb_config")
	}
}

// compileCluster compiles the policy of a cluster given in YAML, which
// must have no error.
func compileCluster(t *testing.T, src string) Policy {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	c := &clusterv3.Cluster{}
	if err := protojson.Unmarshal(j, c); err != nil {
		t.Fatal(err)
	}
	p, errs := ForCluster(c, testRegistry(t))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return p
}
