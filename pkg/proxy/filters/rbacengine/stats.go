package rbacengine

import (
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// Stats are an RBAC filter's counters, Envoy's: allowed and denied under
// <prefix>rbac.<rules_stat_prefix>, shadow_allowed and shadow_denied
// under <prefix>rbac.<shadow_rules_stat_prefix> (the rule prefixes are
// put before the names as they are, as Envoy does).
type Stats struct {
	Allowed, Denied, ShadowAllowed, ShadowDenied *stats.Counter
}

// NewStats makes the counters; prefix is the filter's scope ("http.<stat_prefix>."
// or the network filter's stat_prefix), joined to "rbac." with a dot
// unless it ends with one.
func NewStats(store *stats.Store, prefix, rulesPrefix, shadowPrefix string) Stats {
	base := "rbac."
	switch {
	case prefix == "":
	case strings.HasSuffix(prefix, "."):
		base = prefix + base
	default:
		base = prefix + "." + base
	}
	return Stats{
		Allowed:       store.Counter(base + rulesPrefix + "allowed"),
		Denied:        store.Counter(base + rulesPrefix + "denied"),
		ShadowAllowed: store.Counter(base + shadowPrefix + "shadow_allowed"),
		ShadowDenied:  store.Counter(base + shadowPrefix + "shadow_denied"),
	}
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
