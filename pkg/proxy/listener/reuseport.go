package listener

import listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

// reusePortWanted is Envoy's choice of SO_REUSEPORT for a listener:
// enable_reuse_port when set, else on. The deprecated reuse_port needs no
// reading: Envoy turns SO_REUSEPORT on when it is true, and by default
// when it is false (its unset value), so it never changes the outcome.
func reusePortWanted(lc *listenerv3.Listener) bool {
	if v := lc.GetEnableReusePort(); v != nil {
		return v.GetValue()
	}
	return true
}
