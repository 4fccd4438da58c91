package router

import (
	"fmt"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// compileHedgePolicy reads a hedge_policy: whether a per-try timeout
// hedges. initial_requests and additional_request_chance are hidden as
// not implemented in Envoy, which sends one request whatever they say;
// Outrigger takes their defaults (1 and 0) and refuses other values
// rather than ignore them. Errors name the field below the policy.
func compileHedgePolicy(hp *routev3.HedgePolicy) (bool, error) {
	if n := hp.GetInitialRequests(); n != nil && n.GetValue() != 1 {
		return false, fmt.Errorf("initial_requests: %d is not supported: Envoy does not implement initial_requests either, and sends one request", n.GetValue())
	}
	if c := hp.GetAdditionalRequestChance(); c.GetNumerator() != 0 {
		return false, fmt.Errorf("additional_request_chance: %d is not supported: Envoy does not implement additional_request_chance either, and sends no additional request", c.GetNumerator())
	}
	return hp.GetHedgeOnPerTryTimeout(), nil
}
