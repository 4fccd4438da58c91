package httpmatch

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/cespare/xxhash/v2"
	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	chv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/input_matchers/consistent_hashing/v3"
	ipv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/input_matchers/ip/v3"
	rfv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/input_matchers/runtime_fraction/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/cidr"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Env is what the custom input matchers of a single_predicate may need
// from the server. The zero Env refuses the matchers that need what it
// lacks, by their field.
type Env struct {
	// Stats is the scope of the IP matcher's stat_prefix counters; nil
	// refuses a stat_prefix.
	Stats *stats.Scope
	// Runtime reads runtime_fraction's key; nil refuses runtime_fraction.
	Runtime runtime.Reader
}

// compileInputMatcher compiles a single_predicate's custom_match: Envoy's
// envoy.matching.input_matchers (the IP, consistent hashing and runtime
// fraction matchers), which match the input's string value.
func compileInputMatcher(tc *xdscorev3.TypedExtensionConfig, path string, env Env) (func(string) bool, error) {
	msg, err := TypedConfig(tc, path, "an input matcher")
	if err != nil {
		return nil, err
	}
	path += ".typed_config"
	switch c := msg.(type) {
	case *ipv3.Ip:
		return compileIPMatcher(c, path, env)
	case *chv3.ConsistentHashing:
		if c.GetModulo() == 0 {
			return nil, errors.New(path + ".modulo: must be above 0")
		}
		if c.GetThreshold() > c.GetModulo() {
			return nil, fmt.Errorf("%s: threshold cannot be greater than modulo: %d > %d", path, c.GetThreshold(), c.GetModulo())
		}
		threshold, modulo, seed := uint64(c.GetThreshold()), uint64(c.GetModulo()), c.GetSeed()
		// As Envoy: the value's hash, modulo, at or above the threshold.
		return func(v string) bool { return hashWithSeed(v, seed)%modulo >= threshold }, nil
	case *rfv3.RuntimeFraction:
		if env.Runtime == nil {
			return nil, errors.New(path + ": the runtime_fraction matcher is not available here")
		}
		rf := c.GetRuntimeFraction()
		if rf.GetDefaultValue() == nil {
			return nil, errors.New(path + ".runtime_fraction.default_value: required")
		}
		f, err := runtime.FractionOf(rf.GetRuntimeKey(), rf.GetDefaultValue())
		if err != nil {
			return nil, fmt.Errorf("%s.runtime_fraction.default_value.%w", path, err)
		}
		seed, r := c.GetSeed(), env.Runtime
		// The value's hash stands for the random draw, so a value is
		// always in or always out of the share for a given setting.
		return func(v string) bool { return f.Enabled(r, hashWithSeed(v, seed)) }, nil
	}
	return nil, fmt.Errorf("%s: input matcher %s is not supported by Outrigger (only the IP, consistent_hashing and runtime_fraction matchers)", path, proto.MessageName(msg))
}

// compileIPMatcher compiles Envoy's IP input matcher: the input is an
// address in one of the ranges. A value that is not an address does not
// match and counts in <stat_prefix>ip_parsing_failed. An IPv4-mapped IPv6
// address is an IPv6 one, in no IPv4 range, as Envoy parses it.
func compileIPMatcher(c *ipv3.Ip, path string, env Env) (func(string) bool, error) {
	if len(c.GetCidrRanges()) == 0 {
		return nil, errors.New(path + ".cidr_ranges: at least one range is required")
	}
	ranges := make([]netip.Prefix, 0, len(c.GetCidrRanges()))
	for i, r := range c.GetCidrRanges() {
		p, err := cidr.Parse(r)
		if err != nil {
			return nil, fmt.Errorf("%s.cidr_ranges[%d]: %w", path, i, err)
		}
		ranges = append(ranges, p)
	}
	var failed *stats.Counter
	if p := c.GetStatPrefix(); p != "" {
		if env.Stats == nil {
			return nil, errors.New(path + ".stat_prefix: the IP matcher's stats are not available here")
		}
		failed = env.Stats.Counter(p + "ip_parsing_failed")
	}
	return func(v string) bool {
		if v == "" {
			return false
		}
		a, err := netip.ParseAddr(v)
		if err != nil {
			if failed != nil {
				failed.Inc()
			}
			return false
		}
		for _, p := range ranges {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}, nil
}

// hashWithSeed is Envoy's HashUtil::xxHash64 of v with a seed.
func hashWithSeed(v string, seed uint64) uint64 {
	d := xxhash.NewWithSeed(seed)
	_, _ = d.WriteString(v)
	return d.Sum64()
}
