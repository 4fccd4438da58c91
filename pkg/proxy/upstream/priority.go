package upstream

import "context"

// highPriorityKey is the context key that marks a request of a route with
// priority HIGH.
type highPriorityKey struct{}

// WithHighPriority returns ctx marked as carrying a request of a route
// whose priority is HIGH (RouteAction.priority): the cluster counts it,
// and the connections opened for it, against its HIGH circuit breakers.
// A request without the mark is of the DEFAULT priority.
func WithHighPriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, highPriorityKey{}, true)
}

// HighPriority reports whether ctx carries a HIGH priority request.
func HighPriority(ctx context.Context) bool {
	v, _ := ctx.Value(highPriorityKey{}).(bool)
	return v
}
