package rbac

import (
	"sync"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filters/rbacengine"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// policyStats are the per-policy counters of track_per_rule_stats,
// Envoy's: http.<stat_prefix>.rbac.[<rules_stat_prefix>.]policy.<policy>.
// {allowed,denied} and http.<stat_prefix>.rbac.[<shadow_rules_stat_prefix>.]
// policy.<policy>.{shadow_allowed,shadow_denied}, made on a policy's first
// decision (the matcher form's policy names are its actions').
type policyStats struct {
	store                 *stats.Store
	rulesPrefix, shadowPx string
	// enforced and shadow map a policy name to its two counters
	// (allowed, denied), made once.
	enforced, shadow sync.Map
}

// newPolicyStats prepares the counters under the filter's prefixes.
func newPolicyStats(store *stats.Store, prefix, rulesPrefix, shadowPrefix string) *policyStats {
	r, s := rbacengine.PolicyPrefixes(prefix, rulesPrefix, shadowPrefix)
	return &policyStats{store: store, rulesPrefix: r, shadowPx: s}
}

// record counts d under its policy, as Envoy's incPolicyAllowed and
// incPolicyDenied (or their shadow forms): only a decision with a policy
// name counts.
func (p *policyStats) record(d rbacengine.Decision, shadow bool) {
	if d.Policy == "" {
		return
	}
	m, prefix, allowed, denied := &p.enforced, p.rulesPrefix, ".allowed", ".denied"
	if shadow {
		m, prefix, allowed, denied = &p.shadow, p.shadowPx, ".shadow_allowed", ".shadow_denied"
	}
	v, ok := m.Load(d.Policy)
	if !ok {
		v, _ = m.LoadOrStore(d.Policy, &[2]*stats.Counter{
			p.store.Counter(prefix + d.Policy + allowed),
			p.store.Counter(prefix + d.Policy + denied),
		})
	}
	c := v.(*[2]*stats.Counter)
	if d.Allowed {
		c[0].Inc()
	} else {
		c[1].Inc()
	}
}
