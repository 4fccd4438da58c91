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
// one; otherwise, and for routes without weighted clusters, a random
// number, as Envoy falls back to its own.
func (s *stream) weightedRandom() uint64 {
	if w := s.cached.WeightedClusters; w != nil {
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
	}
	return rand.Uint64()
}
