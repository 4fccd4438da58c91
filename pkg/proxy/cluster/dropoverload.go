package cluster

import (
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// dropLimitKey is the runtime key that caps every cluster's drop ratio,
// in percent (0 to 100; Envoy's default 100 is no cap).
const dropLimitKey = "load_balancing_policy.drop_overload_limit"

// dropScale is the unit of a drop ratio: parts per million, the finest
// denominator a FractionalPercent has.
const dropScale = 1_000_000

// dropOverload is a load assignment's policy.drop_overloads: the share
// of requests, in parts per million, that the router answers with a 503
// before choosing a host, and the category load reports count them under.
type dropOverload struct {
	ppm      uint32
	category string
}

// buildDropOverload reads a load assignment's policy.drop_overloads.
// Envoy takes at most one entry (one category) and a ratio within 0..1,
// and refuses the rest with these messages. Errors are relative to the
// policy.
func buildDropOverload(p *endpointv3.ClusterLoadAssignment_Policy) (dropOverload, error) {
	drops := p.GetDropOverloads()
	if len(drops) == 0 {
		return dropOverload{}, nil
	}
	if len(drops) > 1 {
		return dropOverload{}, configErrorf("drop_overloads", "Cluster drop_overloads config has %d categories. Envoy only support one.", len(drops))
	}
	pct := drops[0].GetDropPercentage()
	var per uint64 // parts per million for one unit of numerator
	switch pct.GetDenominator() {
	case typev3.FractionalPercent_HUNDRED:
		per = dropScale / 100
	case typev3.FractionalPercent_TEN_THOUSAND:
		per = dropScale / 10_000
	case typev3.FractionalPercent_MILLION:
		per = 1
	default:
		return dropOverload{}, configErrorf("drop_overloads[0].drop_percentage.denominator", "Cluster drop_overloads config denominator setting is invalid : %d. Valid range 0~2.", int32(pct.GetDenominator()))
	}
	ppm := uint64(pct.GetNumerator()) * per
	if ppm > dropScale {
		return dropOverload{}, configErrorf("drop_overloads[0].drop_percentage", "Cluster drop_overloads config is invalid. drop_ratio=%g(Numerator %d / Denominator %d). The valid range is 0~1.",
			float64(ppm)/dropScale, pct.GetNumerator(), dropScale/per)
	}
	return dropOverload{ppm: uint32(ppm), category: drops[0].GetCategory()}, nil
}

// setDropOverload installs a load assignment's drop_overloads.
func (c *Cluster) setDropOverload(d dropOverload) {
	c.drop.Store(d.ppm)
	c.dropCategory.Store(&d.category)
}

// DropOverload reports whether a request to the cluster is to be dropped
// under its load assignment's drop_overloads: a draw per request, as
// Envoy's router makes before it chooses a host. The runtime's
// load_balancing_policy.drop_overload_limit caps the ratio; Envoy reads it
// when it reads the assignment (and refuses one above 100), Outrigger at
// each request (ignoring one above 100), so that it acts at once. A drop
// is counted for the load reports (see LatchDrops).
func (c *Cluster) DropOverload() bool {
	ppm := uint64(c.drop.Load())
	if ppm == 0 {
		return false
	}
	if c.runtime != nil {
		if snap := c.runtime(); snap != nil {
			if limit := snap.Uint64(dropLimitKey, 100); limit <= 100 {
				ppm = min(ppm, limit*(dropScale/100))
			}
		}
	}
	if c.rand()%dropScale >= ppm {
		return false
	}
	c.loadDrops.dropped.Add(1)
	c.loadDrops.overload.Add(1)
	return true
}
