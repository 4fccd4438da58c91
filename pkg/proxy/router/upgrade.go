package router

import (
	"fmt"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// UpgradeConnect is the upgrade type of CONNECT requests, which Envoy
// treats as an upgrade named by their method.
const UpgradeConnect = "CONNECT"

// ConnectConfig is a route's connect_config: CONNECT requests on the
// route end at the proxy, which answers 200 and carries the request's
// payload to the cluster's host over TCP.
type ConnectConfig struct{}

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
		if !strings.EqualFold(t, UpgradeConnect) {
			return fmt.Errorf("upgrade_configs[%d].connect_config: non-CONNECT upgrade type %s has ConnectConfig", i, u.GetUpgradeType())
		}
		// proxy_protocol_config and allow_post are refused by the
		// loader's support table; they never get here set.
		if cc.GetProxyProtocolConfig() != nil || cc.GetAllowPost() {
			return fmt.Errorf("upgrade_configs[%d].connect_config: proxy_protocol_config and allow_post are not supported by Outrigger", i)
		}
		r.Connect = &ConnectConfig{}
	}
	return nil
}

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
