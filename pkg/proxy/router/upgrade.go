package router

import (
	"fmt"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// UpgradeConnect is the upgrade type of CONNECT requests, which Envoy
// treats as an upgrade named by their method.
const UpgradeConnect = "CONNECT"

// UpgradeConnectUDP is the upgrade type of CONNECT-UDP requests (RFC
// 9298): an HTTP/1.1 Upgrade to connect-udp, or an HTTP/2 extended
// CONNECT with :protocol connect-udp.
const UpgradeConnectUDP = "CONNECT-UDP"

// ConnectConfig is a route's connect_config: CONNECT requests on the
// route end at the proxy, which answers 200 and carries the request's
// payload to the cluster's host over TCP; CONNECT-UDP requests end there
// too, their capsules' datagrams going to the host over UDP. As in Envoy,
// a route has one: the connect_config of its CONNECT or its CONNECT-UDP
// upgrade (the last one given), and it serves both kinds of request.
type ConnectConfig struct {
	// AllowPost: POST requests on the route are carried the same way,
	// their body as the payload (allow_post).
	AllowPost bool
	// ProxyProtocol (proxy_protocol_config): the payload sent upstream
	// starts with a PROXY header of the downstream connection's addresses,
	// v2 when ProxyProtocolV2 is set, else v1.
	ProxyProtocol, ProxyProtocolV2 bool
}

// upgradeMap is a route action's upgrade_configs: each upgrade type, lower
// case, and whether the route enables it.
type upgradeMap map[string]bool

// compileUpgrades compiles a route action's upgrade_configs into r;
// errors name the field below the route action.
func compileUpgrades(r *Route, cfgs []*routev3.RouteAction_UpgradeConfig) error {
	for i, u := range cfgs {
		t := strings.ToLower(u.GetUpgradeType())
		if t == "" {
			return fmt.Errorf("upgrade_configs[%d].upgrade_type: must not be empty", i)
		}
		if _, dup := r.upgrades[t]; dup {
			// Envoy's message: "Duplicate upgrade <type>".
			return fmt.Errorf("upgrade_configs[%d].upgrade_type: duplicate upgrade %s", i, u.GetUpgradeType())
		}
		enabled := true
		if e := u.GetEnabled(); e != nil {
			enabled = e.GetValue()
		}
		if r.upgrades == nil {
			r.upgrades = upgradeMap{}
		}
		r.upgrades[t] = enabled
		cc := u.GetConnectConfig()
		if cc == nil {
			continue
		}
		if !strings.EqualFold(t, UpgradeConnect) && !strings.EqualFold(t, UpgradeConnectUDP) {
			return fmt.Errorf("upgrade_configs[%d].connect_config: non-CONNECT upgrade type %s has ConnectConfig", i, u.GetUpgradeType())
		}
		r.Connect = &ConnectConfig{AllowPost: cc.GetAllowPost()}
		if pp := cc.GetProxyProtocolConfig(); pp != nil {
			// Envoy's TCP upstream writes a header of the version alone,
			// with the downstream connection's addresses: TLV settings
			// would have no effect, so they are refused.
			if len(pp.GetAddedTlvs()) > 0 || pp.GetPassThroughTlvs() != nil {
				field := "added_tlvs"
				if len(pp.GetAddedTlvs()) == 0 {
					field = "pass_through_tlvs"
				}
				return fmt.Errorf("upgrade_configs[%d].connect_config.proxy_protocol_config.%s: the PROXY header of a terminated CONNECT carries no TLVs (as in Envoy)", i, field)
			}
			r.Connect.ProxyProtocol = true
			r.Connect.ProxyProtocolV2 = pp.GetVersion() == corev3.ProxyProtocolConfig_V2
		}
	}
	return nil
}

// TerminatesTunnel reports whether the route ends a request of method at
// the proxy and carries its payload over TCP: a CONNECT (isConnect) on a
// route with connect_config, or a POST with allow_post.
func (r *Route) TerminatesTunnel(method string, isConnect bool) bool {
	return r.Connect != nil && (isConnect || (r.Connect.AllowPost && method == "POST"))
}

// TerminatesConnectUDP reports whether the route ends a CONNECT-UDP
// request at the proxy and relays its datagrams over UDP: any route with
// a connect_config, as Envoy's router picks its UDP upstream.
func (r *Route) TerminatesConnectUDP() bool { return r.Connect != nil }

// Upgrade looks the upgrade type t (case-insensitive) up in the route's
// upgrade_configs: whether the route sets it, and if so whether it enables
// it.
func (r *Route) Upgrade(t string) (enabled, set bool) {
	if len(r.upgrades) == 0 {
		return false, false
	}
	enabled, set = r.upgrades[strings.ToLower(t)]
	return enabled, set
}
