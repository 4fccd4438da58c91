package lb

import (
	"fmt"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/common/v3"
	leastrequestv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	maglevv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/maglev/v3"
	randomv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/random/v3"
	ringhashv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	roundrobinv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// Factory compiles a load-balancing policy extension's typed_config: the
// registry's Factory for the category envoy.load_balancing_policies.
// Errors carry paths relative to the config message.
type Factory interface {
	Compile(cfg proto.Message) (Policy, []error)
}

// The policies' factories.
type (
	RoundRobinFactory   struct{}
	LeastRequestFactory struct{}
	RandomFactory       struct{}
	RingHashFactory     struct{}
	MaglevFactory       struct{}
)

// wrongType is the error of a factory handed another policy's config.
func wrongType(want, got proto.Message) []error {
	return []error{fieldErrorf("", "expected %s, got %s", proto.MessageName(want), proto.MessageName(got))}
}

// Compile checks a RoundRobin.
func (RoundRobinFactory) Compile(cfg proto.Message) (Policy, []error) {
	c, ok := cfg.(*roundrobinv3.RoundRobin)
	if !ok {
		return nil, wrongType(&roundrobinv3.RoundRobin{}, cfg)
	}
	return roundRobinPolicy{slowStart: compileSlowStart(c.GetSlowStartConfig()), locality: c.GetLocalityLbConfig()}, nil
}

// Compile checks a LeastRequest.
func (LeastRequestFactory) Compile(cfg proto.Message) (Policy, []error) {
	c, ok := cfg.(*leastrequestv3.LeastRequest)
	if !ok {
		return nil, wrongType(&leastrequestv3.LeastRequest{}, cfg)
	}
	p, errs := compileLeastRequest(c.GetChoiceCount().GetValue(), c.GetChoiceCount() != nil, c.GetActiveRequestBias())
	p.slowStart = compileSlowStart(c.GetSlowStartConfig())
	//lint:ignore SA1019 Envoy still honours the deprecated enable_full_scan
	fullScan := c.GetEnableFullScan().GetValue()
	p.fullScan = fullScan || c.GetSelectionMethod() == leastrequestv3.LeastRequest_FULL_SCAN
	p.locality = c.GetLocalityLbConfig()
	return p, errs
}

// Compile checks a Random.
func (RandomFactory) Compile(cfg proto.Message) (Policy, []error) {
	c, ok := cfg.(*randomv3.Random)
	if !ok {
		return nil, wrongType(&randomv3.Random{}, cfg)
	}
	return randomPolicy{locality: c.GetLocalityLbConfig()}, nil
}

// Compile checks a RingHash.
func (RingHashFactory) Compile(cfg proto.Message) (Policy, []error) {
	c, ok := cfg.(*ringhashv3.RingHash)
	if !ok {
		return nil, wrongType(&ringhashv3.RingHash{}, cfg)
	}
	p, errs := compileRingHash(c.GetMinimumRingSize().GetValue(), c.GetMinimumRingSize() != nil,
		c.GetMaximumRingSize().GetValue(), c.GetMaximumRingSize() != nil)
	p.murmur = c.GetHashFunction() == ringhashv3.RingHash_MURMUR_HASH_2
	//lint:ignore SA1019 Envoy still reads the deprecated field when consistent_hashing_lb_config is unset
	p.useHostname = c.GetUseHostnameForHashing()
	//lint:ignore SA1019 Envoy still reads the deprecated field when consistent_hashing_lb_config is unset
	p.balanceFactor = c.GetHashBalanceFactor().GetValue()
	return p, append(errs, hashingSettings(c, &p.useHostname, &p.balanceFactor, &p.hashPolicy, &p.localityWeighted)...)
}

// Compile checks a Maglev.
func (MaglevFactory) Compile(cfg proto.Message) (Policy, []error) {
	c, ok := cfg.(*maglevv3.Maglev)
	if !ok {
		return nil, wrongType(&maglevv3.Maglev{}, cfg)
	}
	p, errs := compileMaglev(c.GetTableSize().GetValue(), c.GetTableSize() != nil)
	return p, append(errs, hashingSettings(c, &p.useHostname, &p.balanceFactor, &p.hashPolicy, &p.localityWeighted)...)
}

// typedHashing is what the typed RingHash and Maglev share.
type typedHashing interface {
	GetConsistentHashingLbConfig() *commonv3.ConsistentHashingLbConfig
	GetLocalityWeightedLbConfig() *commonv3.LocalityLbConfig_LocalityWeightedLbConfig
}

// hashingSettings reads a typed hash policy's consistent_hashing_lb_config
// (use_hostname_for_hashing and hash_balance_factor, when it is set, and
// its hash_policy) into useHostname, balanceFactor and hashPolicy, and
// locality_weighted_lb_config into localityWeighted.
func hashingSettings(c typedHashing, useHostname *bool, balanceFactor *uint32, hashPolicy **router.HashPolicy, localityWeighted *bool) []error {
	var errs []error
	if ch := c.GetConsistentHashingLbConfig(); ch != nil {
		*useHostname = ch.GetUseHostnameForHashing()
		*balanceFactor = ch.GetHashBalanceFactor().GetValue()
		if hp := ch.GetHashPolicy(); len(hp) > 0 {
			var err error
			if *hashPolicy, err = router.CompileHashPolicy(hp); err != nil {
				// The router's error starts with the entry's path.
				path, msg, _ := strings.Cut(err.Error(), ": ")
				errs = append(errs, fieldErrorf("consistent_hashing_lb_config.hash_policy"+path, "%s", msg))
			}
		}
	}
	*localityWeighted = c.GetLocalityWeightedLbConfig() != nil
	return errs
}

// compileLeastRequest checks choice_count and active_request_bias (the
// fields the legacy and typed configs share, named alike).
func compileLeastRequest(choices uint32, choicesSet bool, bias *corev3.RuntimeDouble) (leastRequestPolicy, []error) {
	p := leastRequestPolicy{choices: defaultChoiceCount, bias: runtimeDouble{def: 1}}
	var errs []error
	if choicesSet {
		if choices < 2 {
			errs = append(errs, fieldErrorf("choice_count", "%d is below 2 (least request compares at least two hosts)", choices))
		} else {
			p.choices = choices
		}
	}
	if bias != nil {
		p.bias = runtimeDouble{key: bias.GetRuntimeKey(), def: bias.GetDefaultValue()}
		if !validWeightFactor(bias.GetDefaultValue()) {
			errs = append(errs, fieldErrorf("active_request_bias.default_value", "%v is not a number of 0 or more", bias.GetDefaultValue()))
		}
	}
	return p, errs
}

// compileRingHash checks minimum_ring_size and maximum_ring_size.
func compileRingHash(minSize uint64, minSet bool, maxSize uint64, maxSet bool) (ringHashPolicy, []error) {
	p := ringHashPolicy{minSize: DefaultMinRingSize, maxSize: DefaultMaxRingSize}
	if minSet {
		p.minSize = minSize
	}
	if maxSet {
		p.maxSize = maxSize
	}
	var errs []error
	switch {
	case p.minSize > DefaultMaxRingSize:
		errs = append(errs, fieldErrorf("minimum_ring_size", "%d is above %d", p.minSize, DefaultMaxRingSize))
	case p.maxSize > DefaultMaxRingSize:
		errs = append(errs, fieldErrorf("maximum_ring_size", "%d is above %d", p.maxSize, DefaultMaxRingSize))
	case p.minSize > p.maxSize:
		// Envoy's words: "ring hash: minimum_ring_size (x) > maximum_ring_size (y)".
		errs = append(errs, fieldErrorf("minimum_ring_size", "minimum_ring_size (%d) > maximum_ring_size (%d)", p.minSize, p.maxSize))
	case p.maxSize == 0:
		errs = append(errs, fieldErrorf("maximum_ring_size", "must be above 0"))
	}
	return p, errs
}

// compileMaglev checks table_size.
func compileMaglev(size uint64, set bool) (maglevPolicy, []error) {
	p := maglevPolicy{tableSize: DefaultMaglevTableSize}
	if !set {
		return p, nil
	}
	switch {
	case size > maxMaglevTableSize:
		return p, []error{fieldErrorf("table_size", "%d is above %d", size, maxMaglevTableSize)}
	case !isPrime(size):
		// Envoy's words.
		return p, []error{fieldErrorf("table_size", "The table size of maglev must be prime number (%d is not)", size)}
	}
	p.tableSize = size
	return p, nil
}

// maxMaglevTableSize is the API's limit on table_size.
const maxMaglevTableSize = 5000011

// slowStartProto is what the legacy and the typed SlowStartConfig share.
type slowStartProto interface {
	GetSlowStartWindow() *durationpb.Duration
	GetAggression() *corev3.RuntimeDouble
	GetMinWeightPercent() *typev3.Percent
}

// compileSlowStart reads a slow_start_config; nil when unset (c may be a
// typed nil: the getters read it as empty), or when its window is under a
// millisecond (Envoy counts it in milliseconds: zero turns slow start
// off).
func compileSlowStart(c slowStartProto) *slowStart {
	if c == nil {
		return nil
	}
	window := c.GetSlowStartWindow().AsDuration().Truncate(time.Millisecond)
	if window <= 0 {
		return nil
	}
	s := &slowStart{window: window, aggression: runtimeDouble{def: defaultAggression}, minWeight: defaultMinWeightPercent / 100.0}
	if a := c.GetAggression(); a != nil {
		s.aggression = runtimeDouble{key: a.GetRuntimeKey(), def: a.GetDefaultValue()}
	}
	if mw := c.GetMinWeightPercent(); mw != nil {
		s.minWeight = mw.GetValue() / 100
	}
	return s
}

// ForCluster compiles a cluster's load-balancing policy as Envoy chooses
// it: its load_balancing_policy when set (the first policy whose
// extension Outrigger has), else lb_policy with its *_lb_config and
// common_lb_config.consistent_hashing_lb_config. Errors are relative to
// the cluster. It is not for a cluster that provides its own balancer
// (ORIGINAL_DST, lb_policy CLUSTER_PROVIDED).
func ForCluster(c *clusterv3.Cluster, reg *extension.Registry) (Policy, []error) {
	if c.GetLoadBalancingPolicy() != nil || c.GetLbPolicy() == clusterv3.Cluster_LOAD_BALANCING_POLICY_CONFIG {
		return typedPolicy(c, reg)
	}
	var (
		p    Policy
		errs []error
	)
	switch c.GetLbPolicy() {
	case clusterv3.Cluster_ROUND_ROBIN:
		p = roundRobinPolicy{slowStart: compileSlowStart(c.GetRoundRobinLbConfig().GetSlowStartConfig())}
	case clusterv3.Cluster_LEAST_REQUEST:
		lc := c.GetLeastRequestLbConfig()
		lr, lerrs := compileLeastRequest(lc.GetChoiceCount().GetValue(), lc.GetChoiceCount() != nil, lc.GetActiveRequestBias())
		lr.slowStart = compileSlowStart(lc.GetSlowStartConfig())
		p, errs = lr, prefixAll("least_request_lb_config", lerrs)
	case clusterv3.Cluster_RANDOM:
		p = randomPolicy{}
	case clusterv3.Cluster_RING_HASH:
		rc := c.GetRingHashLbConfig()
		rh, rerrs := compileRingHash(rc.GetMinimumRingSize().GetValue(), rc.GetMinimumRingSize() != nil,
			rc.GetMaximumRingSize().GetValue(), rc.GetMaximumRingSize() != nil)
		rh.murmur = rc.GetHashFunction() == clusterv3.Cluster_RingHashLbConfig_MURMUR_HASH_2
		rh.useHostname, rh.balanceFactor = legacyConsistentHashing(c)
		p, errs = rh, prefixAll("ring_hash_lb_config", rerrs)
	case clusterv3.Cluster_MAGLEV:
		mc := c.GetMaglevLbConfig()
		m, merrs := compileMaglev(mc.GetTableSize().GetValue(), mc.GetTableSize() != nil)
		m.useHostname, m.balanceFactor = legacyConsistentHashing(c)
		p, errs = m, prefixAll("maglev_lb_config", merrs)
	default:
		return nil, []error{fieldErrorf("lb_policy", "%s is not supported by Outrigger (supported: ROUND_ROBIN, LEAST_REQUEST, RANDOM, RING_HASH, MAGLEV, LOAD_BALANCING_POLICY_CONFIG)", c.GetLbPolicy())}
	}
	return p, errs
}

// legacyConsistentHashing reads common_lb_config.consistent_hashing_lb_config
// for a RING_HASH or MAGLEV cluster.
func legacyConsistentHashing(c *clusterv3.Cluster) (useHostname bool, balanceFactor uint32) {
	ch := c.GetCommonLbConfig().GetConsistentHashingLbConfig()
	return ch.GetUseHostnameForHashing(), ch.GetHashBalanceFactor().GetValue()
}

// LegacyConfigIgnored names the *_lb_config of c that its policy does not
// read ("" for none): Envoy accepts and ignores another policy's
// configuration, and so does Outrigger, with a warning.
func LegacyConfigIgnored(c *clusterv3.Cluster) string {
	var set string
	switch c.GetLbConfig().(type) {
	case *clusterv3.Cluster_RingHashLbConfig_:
		set = "ring_hash_lb_config"
	case *clusterv3.Cluster_MaglevLbConfig_:
		set = "maglev_lb_config"
	case *clusterv3.Cluster_LeastRequestLbConfig_:
		set = "least_request_lb_config"
	case *clusterv3.Cluster_RoundRobinLbConfig_:
		set = "round_robin_lb_config"
	default:
		return ""
	}
	if c.GetLoadBalancingPolicy() != nil || c.GetLbPolicy() == clusterv3.Cluster_LOAD_BALANCING_POLICY_CONFIG {
		return set
	}
	used := map[clusterv3.Cluster_LbPolicy]string{
		clusterv3.Cluster_ROUND_ROBIN:   "round_robin_lb_config",
		clusterv3.Cluster_LEAST_REQUEST: "least_request_lb_config",
		clusterv3.Cluster_RING_HASH:     "ring_hash_lb_config",
		clusterv3.Cluster_MAGLEV:        "maglev_lb_config",
	}[c.GetLbPolicy()]
	if set == used {
		return ""
	}
	return set
}

// typedPolicy compiles load_balancing_policy: Envoy takes the first
// policy whose extension it has, skipping the others, and refuses the
// cluster when none is; the common_lb_config fields that only the legacy
// policies read may not be combined with it.
func typedPolicy(c *clusterv3.Cluster, reg *extension.Registry) (Policy, []error) {
	lbp := c.GetLoadBalancingPolicy()
	if lbp == nil {
		return nil, []error{fieldErrorf("load_balancing_policy", "required when lb_policy is LOAD_BALANCING_POLICY_CONFIG")}
	}
	var errs []error
	if cc := c.GetCommonLbConfig(); cc != nil {
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"zone_aware_lb_config", cc.GetZoneAwareLbConfig() != nil},
			{"locality_weighted_lb_config", cc.GetLocalityWeightedLbConfig() != nil},
			{"consistent_hashing_lb_config", cc.GetConsistentHashingLbConfig() != nil},
		} {
			if f.set {
				errs = append(errs, fieldErrorf("common_lb_config."+f.name, "cannot be combined with load_balancing_policy (configure it in the policy's typed config)"))
			}
		}
	}
	var missing []string
	for i, pol := range lbp.GetPolicies() {
		tec := pol.GetTypedExtensionConfig()
		var (
			ext extension.Extension
			ok  bool
		)
		if reg != nil {
			ext, ok = reg.Lookup(tec.GetTypedConfig().GetTypeUrl())
		}
		if !ok || ext.Category != Category || ext.Disabled {
			missing = append(missing, tec.GetName())
			continue
		}
		path := fmt.Sprintf("load_balancing_policy.policies[%d].typed_extension_config.typed_config", i)
		f, ok := ext.Factory.(Factory)
		if !ok {
			return nil, append(errs, fieldErrorf(path, "extension %q has no load balancer factory", ext.Name))
		}
		cfg, err := tec.GetTypedConfig().UnmarshalNew()
		if err != nil {
			return nil, append(errs, fieldErrorf(path, "decode %s: %v", extension.TypeName(tec.GetTypedConfig().GetTypeUrl()), err))
		}
		p, perrs := f.Compile(cfg)
		return p, append(errs, prefixAll(path, perrs)...)
	}
	// Envoy's words, then what would do.
	return nil, append(errs, fieldErrorf("load_balancing_policy.policies",
		"didn't find a registered load balancer factory implementation for cluster: '%s' with names from [%s] (Outrigger has envoy.load_balancing_policies.round_robin, least_request, random, ring_hash and maglev)",
		c.GetName(), strings.Join(missing, ", ")))
}
