package lb

import "github.com/outrigger-dev/outrigger/pkg/proxy/upstream"

// Picker chooses one host of a fixed, non-empty host list. Implementations
// are safe for concurrent use and do not allocate. ctx is the pick's
// downstream side (the request's hash for the hash-based policies, the
// route's metadata_match for subsets); it may be nil, and a Picker only
// reads it.
type Picker interface {
	Pick(ctx *upstream.PickContext) *upstream.Host
}

// PickerFactory builds the Picker of one host list (never empty). seed
// varies the starting point, so that proxies started together do not all
// send their first requests to the same host.
type PickerFactory func(hosts []*upstream.Host, seed uint64) Picker
