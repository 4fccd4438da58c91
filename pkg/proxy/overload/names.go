package overload

import "strings"

// The overload actions Outrigger implements, in Envoy's spelling; the
// proxy. spelling names the same action.
const (
	ActionStopAcceptingRequests     = "envoy.overload_actions.stop_accepting_requests"
	ActionDisableHTTPKeepalive      = "envoy.overload_actions.disable_http_keepalive"
	ActionStopAcceptingConnections  = "envoy.overload_actions.stop_accepting_connections"
	ActionRejectIncomingConnections = "envoy.overload_actions.reject_incoming_connections"
	ActionReduceTimeouts            = "envoy.overload_actions.reduce_timeouts"
	ActionShrinkHeap                = "envoy.overload_actions.shrink_heap"
)

// MonitorGlobalConnections is the name the downstream connections monitor
// must have (either spelling): Envoy recognises its proactive resource by
// this name.
const MonitorGlobalConnections = "envoy.resource_monitors.global_downstream_max_connections"

// GlobalMaxConnectionsRuntimeKey is the older runtime key for the global
// downstream connection limit, used when the downstream connections monitor
// is not configured.
const GlobalMaxConnectionsRuntimeKey = "overload.global_downstream_max_connections"

// actionKind indexes the implemented actions.
type actionKind int

const (
	stopAcceptingRequests actionKind = iota
	disableHTTPKeepalive
	stopAcceptingConnections
	rejectIncomingConnections
	reduceTimeouts
	shrinkHeap
	numActions
)

// actionNames are the implemented actions by kind. It is an immutable
// table.
var actionNames = [numActions]string{
	stopAcceptingRequests:     ActionStopAcceptingRequests,
	disableHTTPKeepalive:      ActionDisableHTTPKeepalive,
	stopAcceptingConnections:  ActionStopAcceptingConnections,
	rejectIncomingConnections: ActionRejectIncomingConnections,
	reduceTimeouts:            ActionReduceTimeouts,
	shrinkHeap:                ActionShrinkHeap,
}

// unimplementedActions are actions Envoy knows and Outrigger does not
// implement. It is an immutable table.
var unimplementedActions = []string{
	"envoy.overload_actions.reset_high_memory_stream",
	"envoy.overload_actions.close_idle_http_connections",
}

// canonical strips the envoy. or proxy. prefix of a name, so that both
// spellings compare equal.
func canonical(name string) string {
	if rest, ok := strings.CutPrefix(name, "envoy."); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(name, "proxy."); ok {
		return rest
	}
	return name
}

// lookupAction returns the kind of a configured action name.
func lookupAction(name string) (actionKind, bool) {
	c := canonical(name)
	for k, n := range actionNames {
		if canonical(n) == c {
			return actionKind(k), true
		}
	}
	return 0, false
}

// isUnimplementedAction reports whether name is an Envoy action Outrigger
// does not implement.
func isUnimplementedAction(name string) bool {
	c := canonical(name)
	for _, n := range unimplementedActions {
		if canonical(n) == c {
			return true
		}
	}
	return false
}
