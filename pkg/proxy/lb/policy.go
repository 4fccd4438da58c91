package lb

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/common/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Category is Envoy's extension category of load-balancing policies, the
// typed form a cluster's load_balancing_policy names.
const Category = "envoy.load_balancing_policies"

// The policies' extension names (proxy. spelling; envoy. works too).
const (
	RoundRobinName   = "proxy.load_balancing_policies.round_robin"
	LeastRequestName = "proxy.load_balancing_policies.least_request"
	RandomName       = "proxy.load_balancing_policies.random"
	RingHashName     = "proxy.load_balancing_policies.ring_hash"
	MaglevName       = "proxy.load_balancing_policies.maglev"
)

// Policy is a compiled load-balancing policy: how each host list of a
// cluster's Balancer chooses its host. It is immutable; a cluster asks it
// for the pickers of each host set it installs.
type Policy interface {
	// Name is the policy as lb_policy names it: ROUND_ROBIN,
	// LEAST_REQUEST, RANDOM, RING_HASH or MAGLEV.
	Name() string
	// HashBased reports whether the pickers route on the pick's hash key
	// (upstream.PickContext.RequestHash), which then also chooses the
	// priority level (Config.HashBased), as Envoy's ring hash and maglev
	// do.
	HashBased() bool
	// Pickers returns the PickerFactory of one host set, built with env.
	Pickers(env Env) PickerFactory
}

// HashPolicyOf returns a ring hash or maglev policy's own hash policy
// (its typed config's consistent_hashing_lb_config.hash_policy), nil when
// it has none. Envoy's balancer then hashes each request with it instead
// of the route's (or tcp_proxy's) hash_policy.
func HashPolicyOf(p Policy) *router.HashPolicy {
	switch p := p.(type) {
	case ringHashPolicy:
		return p.hashPolicy
	case maglevPolicy:
		return p.hashPolicy
	}
	return nil
}

// LocalityOf returns a typed round robin, least request or random
// policy's locality_lb_config (zone-aware or locality-weighted balancing,
// which the cluster applies as it applies common_lb_config's), nil when
// it has none.
func LocalityOf(p Policy) *commonv3.LocalityLbConfig {
	switch p := p.(type) {
	case roundRobinPolicy:
		return p.locality
	case leastRequestPolicy:
		return p.locality
	case randomPolicy:
		return p.locality
	}
	return nil
}

// Env is what a policy's pickers may read of their cluster when it
// installs a host set.
type Env struct {
	// Now is the time of the install.
	Now time.Time
	// Clock reads the time of a pick, for hosts in slow start; nil means
	// time.Now.
	Clock func() time.Time
	// FirstSet is when the cluster installed its first host set (with
	// hosts): hosts created after it (upstream.Host.Created) are new, and
	// slow start ramps their weight up.
	FirstSet time.Time
	// Rand draws the pickers' random numbers; nil means math/rand/v2.
	Rand func() uint64
	// Runtime reads the runtime values a policy names
	// (active_request_bias, slow start's aggression), once per install;
	// nil reads none.
	Runtime Runtime
	// Stats is the cluster's scope ("cluster.<name>."), under which ring
	// hash and maglev keep their gauges; nil keeps none.
	Stats *stats.Scope
}

// Runtime reads runtime values; *runtime.Snapshot implements it.
type Runtime interface {
	Get(key string) (string, bool)
}

// activeRequests is the cluster's upstream_rq_active, nil without stats.
func (env *Env) activeRequests() *stats.Gauge {
	if env.Stats == nil {
		return nil
	}
	return env.Stats.Gauge("upstream_rq_active")
}

// rand is env's random source.
func (env *Env) rand() func() uint64 {
	if env.Rand == nil {
		return rand.Uint64
	}
	return env.Rand
}

// clock is env's clock for picks.
func (env *Env) clock() func() time.Time {
	if env.Clock == nil {
		return time.Now
	}
	return env.Clock
}

// runtimeDouble is a RuntimeDouble: a default, overridden by a runtime
// key's value when it reads as a number.
type runtimeDouble struct {
	key string
	def float64
}

// value reads d as Envoy's Runtime::Double does.
func (d runtimeDouble) value(rt Runtime) float64 {
	if d.key == "" || rt == nil {
		return d.def
	}
	s, ok := rt.Get(d.key)
	if !ok {
		return d.def
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return d.def
	}
	return v
}

// validWeightFactor reports whether v may scale weights: a runtime value
// that is negative or not a number falls back to Envoy's default.
func validWeightFactor(v float64) bool { return !math.IsNaN(v) && v >= 0 }
