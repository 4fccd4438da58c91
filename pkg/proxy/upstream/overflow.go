package upstream

import "errors"

// ErrOverflow is the error of a request or connection a cluster's circuit
// breaker refused: the cluster already has as many pending requests,
// active requests or connections as its thresholds allow. The router
// answers it with a 503 flagged UO and x-envoy-overloaded: true, the TCP
// proxy closes the downstream connection with the UO flag, as Envoy's do.
var ErrOverflow = errors.New("overflow")
