package rbacengine

import (
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Stats are an RBAC filter's counters, Envoy's: allowed and denied under
// <prefix>rbac.<rules_stat_prefix>, shadow_allowed and shadow_denied
// under <prefix>rbac.<shadow_rules_stat_prefix>, each part joined to the
// next with a dot unless it ends with one (Envoy's statPrefixJoin).
type Stats struct {
	Allowed, Denied, ShadowAllowed, ShadowDenied *stats.Counter
}

// NewStats makes the counters; prefix is the filter's scope
// ("http.<stat_prefix>." or the network filter's stat_prefix).
func NewStats(store *stats.Store, prefix, rulesPrefix, shadowPrefix string) Stats {
	base := join(prefix, "rbac.")
	rules, shadow := join(base, rulesPrefix), join(base, shadowPrefix)
	return Stats{
		Allowed:       store.Counter(join(rules, "allowed")),
		Denied:        store.Counter(join(rules, "denied")),
		ShadowAllowed: store.Counter(join(shadow, "shadow_allowed")),
		ShadowDenied:  store.Counter(join(shadow, "shadow_denied")),
	}
}

// join is Envoy's statPrefixJoin: prefix and token with a dot between
// them unless prefix is empty or ends with one.
func join(prefix, token string) string {
	switch {
	case prefix == "":
		return token
	case strings.HasSuffix(prefix, "."):
		return prefix + token
	}
	return prefix + "." + token
}

// Record counts an enforced decision.
func (s *Stats) Record(d Decision) {
	if d.Allowed {
		s.Allowed.Inc()
	} else {
		s.Denied.Inc()
	}
}

// RecordShadow counts a shadow decision.
func (s *Stats) RecordShadow(d Decision) {
	if d.Allowed {
		s.ShadowAllowed.Inc()
	} else {
		s.ShadowDenied.Inc()
	}
}

// PolicyPrefixes are the prefixes of the per-policy counters
// (track_per_rule_stats): <prefix>rbac.<rules_stat_prefix>.policy. and
// <prefix>rbac.<shadow_rules_stat_prefix>.policy., joined as NewStats
// joins, as Envoy's generateStats.
func PolicyPrefixes(prefix, rulesPrefix, shadowPrefix string) (rules, shadow string) {
	base := join(prefix, "rbac.")
	return join(join(base, rulesPrefix), "policy."), join(join(base, shadowPrefix), "policy.")
}
