package httpconn

import (
	"fmt"
	"strings"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// readUpgrades reads the connection manager's upgrade_configs: each
// upgrade type, lower case (Envoy matches them case-insensitively), and
// whether it is enabled. The custom filter chains of an upgrade (filters)
// are refused by the loader's support table.
func readUpgrades(cfgs []*hcmv3.HttpConnectionManager_UpgradeConfig) (map[string]bool, error) {
	if len(cfgs) == 0 {
		return nil, nil
	}
	m := make(map[string]bool, len(cfgs))
	for i, u := range cfgs {
		t := strings.ToLower(u.GetUpgradeType())
		if t == "" {
			return nil, fmt.Errorf("upgrade_configs[%d].upgrade_type: must not be empty", i)
		}
		if _, dup := m[t]; dup {
			// Envoy's message: "Error: multiple upgrade configs with
			// the same name: '<type>'".
			return nil, fmt.Errorf("upgrade_configs[%d].upgrade_type: multiple upgrade configs with the same name: '%s'", i, u.GetUpgradeType())
		}
		enabled := true
		if e := u.GetEnabled(); e != nil {
			enabled = e.GetValue()
		}
		m[t] = enabled
	}
	return m, nil
}
