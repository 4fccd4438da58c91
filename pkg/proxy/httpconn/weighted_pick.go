package httpconn

import (
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// weightedRandom is the number that picks the matched route's weighted
// cluster: the unsigned number in the request's header_name header, or the
// route's hash policy's hash with use_hash_policy, when the request has
// one; otherwise a random number, as Envoy falls back to its own. A route
// without weighted clusters picks nothing and gets 0: PickClusterWith
// does not read the number then, and drawing one costs more than the
// rest of the pick.
func (s *stream) weightedRandom() uint64 {
	w := s.cached.WeightedClusters
	if w == nil {
		return 0
	}
	switch {
	case w.HeaderName != "":
		if v, ok := s.reqHeaders.Get(w.HeaderName); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
				return n
			}
		}
	case w.UseHashPolicy && s.cached.HashPolicy != nil:
		// A cookie the policy would generate is not sent for this
		// pick: its hash is as random as the fallback.
		in := router.HashInput{Request: &s.rreq, SourceIP: s.remoteIP, ConnRemote: s.remote, ConnLocal: s.local, FilterState: s.filterStateHash}
		if h, ok := s.cached.HashPolicy.Hash(&in); ok {
			return h
		}
	}
	return rand.Uint64()
}
