package kubectl

import (
	"net"
	"strconv"
	"strings"
)

// listenersDump is the part of ListenersConfigDump the table shows.
type listenersDump struct {
	Static []struct {
		Listener    listenerConfig `json:"listener"`
		LastUpdated string         `json:"last_updated"`
	} `json:"static_listeners"`
	Dynamic []struct {
		Name     string         `json:"name"`
		Active   *listenerState `json:"active_state"`
		Warming  *listenerState `json:"warming_state"`
		Draining *listenerState `json:"draining_state"`
		Error    *struct {
			Details string `json:"details"`
		} `json:"error_state"`
	} `json:"dynamic_listeners"`
}

// listenerState is one state of a dynamic listener.
type listenerState struct {
	VersionInfo string         `json:"version_info"`
	Listener    listenerConfig `json:"listener"`
	LastUpdated string         `json:"last_updated"`
}

// listenerConfig is the part of a Listener the table shows.
type listenerConfig struct {
	Name    string  `json:"name"`
	Address address `json:"address"`
	// TrafficDirection is left out when UNSPECIFIED.
	TrafficDirection string        `json:"traffic_direction"`
	FilterChains     []filterChain `json:"filter_chains"`
	DefaultChain     *filterChain  `json:"default_filter_chain"`
}

// filterChain is the part of a FilterChain the table shows.
type filterChain struct {
	Filters []struct {
		Name string `json:"name"`
	} `json:"filters"`
}

// address is a config.core.v3.Address.
type address struct {
	Socket *struct {
		Address   string `json:"address"`
		PortValue uint32 `json:"port_value"`
		NamedPort string `json:"named_port"`
	} `json:"socket_address"`
	Pipe *struct {
		Path string `json:"path"`
	} `json:"pipe"`
	Internal *struct {
		ServerListenerName string `json:"server_listener_name"`
	} `json:"envoy_internal_address"`
}

// String is host:port, the pipe's path or the internal listener's name.
func (a address) String() string {
	switch {
	case a.Socket != nil:
		port := strconv.FormatUint(uint64(a.Socket.PortValue), 10)
		if a.Socket.NamedPort != "" {
			port = a.Socket.NamedPort
		}
		return net.JoinHostPort(a.Socket.Address, port)
	case a.Pipe != nil:
		return a.Pipe.Path
	case a.Internal != nil:
		return "internal:" + a.Internal.ServerListenerName
	default:
		return ""
	}
}

// chains counts the filter chains, the default one included.
func (l listenerConfig) chains() string {
	n := len(l.FilterChains)
	if l.DefaultChain != nil {
		n++
	}
	return strconv.Itoa(n)
}

// filters lists the network filters of every chain, each name once.
func (l listenerConfig) filters() string {
	chains := l.FilterChains
	if l.DefaultChain != nil {
		chains = append(chains, *l.DefaultChain)
	}
	var names []string
	seen := map[string]bool{}
	for _, c := range chains {
		for _, f := range c.Filters {
			n := shortName(f.Name)
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	return strings.Join(names, ",")
}

// listenersTable prints the proxy's listeners.
func listenersTable(a *app, raw []byte) error {
	var d listenersDump
	if err := parseSection(raw, listenersDumpType, &d); err != nil {
		return err
	}
	tab := newTable(a.stdout, "NAME", "ADDRESS", "DIRECTION", "CHAINS", "FILTERS", "SOURCE", "STATE", "VERSION", "LAST UPDATED")
	row := func(l listenerConfig, source, state, version, updated string) {
		tab.row(l.Name, l.Address.String(), l.TrafficDirection, l.chains(), l.filters(), source, state, version, a.lastUpdated(updated))
	}
	for _, l := range d.Static {
		row(l.Listener, "static", "active", "", l.LastUpdated)
	}
	for _, l := range d.Dynamic {
		for _, s := range []struct {
			name  string
			state *listenerState
		}{{"active", l.Active}, {"warming", l.Warming}, {"draining", l.Draining}} {
			if s.state != nil {
				row(s.state.Listener, "dynamic", s.name, s.state.VersionInfo, s.state.LastUpdated)
			}
		}
		if l.Error != nil {
			tab.row(l.Name, "", "", "", "", "dynamic", "error: "+l.Error.Details, "", "")
		}
	}
	return tab.flush()
}
