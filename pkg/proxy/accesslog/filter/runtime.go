package filter

import (
	"errors"
	"math/rand/v2"
	"strconv"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// runtimeFilter samples requests: a percentage, overridable by a runtime
// key, drawn from the request id so that every logger (and every proxy on
// the request's way) makes the same choice, unless
// use_independent_randomness asks for a fresh draw.
type runtimeFilter struct {
	key         string
	numerator   uint64
	denominator uint64
	independent bool
	runtime     Runtime
	random      func() uint64
}

func compileRuntime(c *accesslogv3.RuntimeFilter, ctx Context) (*runtimeFilter, error) {
	if c.GetRuntimeKey() == "" {
		return nil, errors.New("runtime_key: must be set")
	}
	r := &runtimeFilter{
		key:         c.GetRuntimeKey(),
		numerator:   uint64(c.GetPercentSampled().GetNumerator()),
		independent: c.GetUseIndependentRandomness(),
		runtime:     ctx.Runtime,
		random:      ctx.Random,
	}
	switch c.GetPercentSampled().GetDenominator() {
	case typev3.FractionalPercent_HUNDRED:
		r.denominator = 100
	case typev3.FractionalPercent_TEN_THOUSAND:
		r.denominator = 10_000
	case typev3.FractionalPercent_MILLION:
		r.denominator = 1_000_000
	default:
		return nil, errors.New("percent_sampled.denominator: unknown denominator")
	}
	if r.random == nil {
		r.random = rand.Uint64
	}
	return r, nil
}

func (r *runtimeFilter) Match(e *accesslog.Entry) bool {
	var v uint64
	if id, ok := requestIDInteger(e); ok && !r.independent {
		v = id % r.denominator
	} else {
		v = r.random()
	}
	n := r.numerator
	if r.runtime != nil {
		n = r.runtime.Uint64(r.key, n)
	}
	// Envoy's featureEnabled: the value's bucket below the percentage.
	return v%r.denominator < min(n, r.denominator)
}

// requestIDInteger is the integer Envoy's UUID request id extension
// derives from x-request-id: its first eight characters in hexadecimal.
func requestIDInteger(e *accesslog.Entry) (uint64, bool) {
	if e.RequestHeaders == nil {
		return 0, false
	}
	id, ok := e.RequestHeaders.Get("x-request-id")
	if !ok || len(id) < 8 {
		return 0, false
	}
	v, err := strconv.ParseUint(id[:8], 16, 64)
	return v, err == nil
}
