package kubectl

import (
	"fmt"
	"strconv"
	"strings"
)

// routesDump is the part of RoutesConfigDump the table shows.
type routesDump struct {
	Static []struct {
		RouteConfig routeConfig `json:"route_config"`
		LastUpdated string      `json:"last_updated"`
	} `json:"static_route_configs"`
	Dynamic []struct {
		VersionInfo string      `json:"version_info"`
		RouteConfig routeConfig `json:"route_config"`
		LastUpdated string      `json:"last_updated"`
	} `json:"dynamic_route_configs"`
}

// routeConfig is the part of a RouteConfiguration the table shows.
type routeConfig struct {
	Name         string `json:"name"`
	VirtualHosts []struct {
		Name    string   `json:"name"`
		Domains []string `json:"domains"`
		Routes  []route  `json:"routes"`
	} `json:"virtual_hosts"`
}

// route is the part of a Route the table shows.
type route struct {
	Name  string `json:"name"`
	Match struct {
		Prefix              *string `json:"prefix"`
		Path                *string `json:"path"`
		PathSeparatedPrefix *string `json:"path_separated_prefix"`
		SafeRegex           *struct {
			Regex string `json:"regex"`
		} `json:"safe_regex"`
		ConnectMatcher *struct{}  `json:"connect_matcher"`
		Headers        []struct{} `json:"headers"`
	} `json:"match"`
	Route *struct {
		Cluster       string `json:"cluster"`
		ClusterHeader string `json:"cluster_header"`
		// ClusterSpecifierPlugin names one of the route configuration's
		// plugins; InlineClusterSpecifierPlugin is the route's own.
		ClusterSpecifierPlugin       string `json:"cluster_specifier_plugin"`
		InlineClusterSpecifierPlugin *struct {
			Extension struct {
				Name string `json:"name"`
			} `json:"extension"`
		} `json:"inline_cluster_specifier_plugin"`
		WeightedClusters *struct {
			Clusters []struct {
				Name   string `json:"name"`
				Weight uint32 `json:"weight"`
			} `json:"clusters"`
		} `json:"weighted_clusters"`
	} `json:"route"`
	Redirect       *struct{} `json:"redirect"`
	DirectResponse *struct {
		Status uint32 `json:"status"`
	} `json:"direct_response"`
	NonForwarding *struct{} `json:"non_forwarding_action"`
}

// match says what the route matches.
func (r route) match() string {
	m := r.Match
	var s string
	switch {
	case m.Prefix != nil:
		s = "prefix " + *m.Prefix
	case m.Path != nil:
		s = "path " + *m.Path
	case m.PathSeparatedPrefix != nil:
		s = "path_separated_prefix " + *m.PathSeparatedPrefix
	case m.SafeRegex != nil:
		s = "regex " + m.SafeRegex.Regex
	case m.ConnectMatcher != nil:
		s = "CONNECT"
	default:
		s = "?"
	}
	switch n := len(m.Headers); n {
	case 0:
	case 1:
		s += " (+1 header)"
	default:
		s += fmt.Sprintf(" (+%d headers)", n)
	}
	return s
}

// action says what the route does.
func (r route) action() string {
	switch {
	case r.Route != nil && r.Route.Cluster != "":
		return "cluster " + r.Route.Cluster
	case r.Route != nil && r.Route.ClusterHeader != "":
		return "cluster from header " + r.Route.ClusterHeader
	case r.Route != nil && r.Route.ClusterSpecifierPlugin != "":
		return "cluster from plugin " + r.Route.ClusterSpecifierPlugin
	case r.Route != nil && r.Route.InlineClusterSpecifierPlugin != nil:
		return "cluster from plugin " + r.Route.InlineClusterSpecifierPlugin.Extension.Name + " (inline)"
	case r.Route != nil && r.Route.WeightedClusters != nil:
		var parts []string
		for _, c := range r.Route.WeightedClusters.Clusters {
			parts = append(parts, c.Name+":"+strconv.FormatUint(uint64(c.Weight), 10))
		}
		return "weighted " + strings.Join(parts, ",")
	case r.Route != nil:
		return "route"
	case r.Redirect != nil:
		return "redirect"
	case r.DirectResponse != nil:
		return "direct_response " + strconv.FormatUint(uint64(r.DirectResponse.Status), 10)
	case r.NonForwarding != nil:
		return "non_forwarding"
	default:
		return "?"
	}
}

// routesTable prints one row per route of every route configuration.
func routesTable(a *app, raw []byte) error {
	var d routesDump
	if err := parseSection(raw, routesDumpType, &d); err != nil {
		return err
	}
	tab := newTable(a.stdout, "ROUTE CONFIG", "VIRTUAL HOST", "DOMAINS", "MATCH", "ACTION", "SOURCE", "VERSION", "LAST UPDATED")
	rows := func(rc routeConfig, source, version, updated string) {
		for _, vh := range rc.VirtualHosts {
			if len(vh.Routes) == 0 {
				tab.row(rc.Name, vh.Name, strings.Join(vh.Domains, ","), "", "", source, version, a.lastUpdated(updated))
			}
			for _, r := range vh.Routes {
				tab.row(rc.Name, vh.Name, strings.Join(vh.Domains, ","), r.match(), r.action(), source, version, a.lastUpdated(updated))
			}
		}
	}
	for _, rc := range d.Static {
		rows(rc.RouteConfig, "static", "", rc.LastUpdated)
	}
	for _, rc := range d.Dynamic {
		rows(rc.RouteConfig, "dynamic", rc.VersionInfo, rc.LastUpdated)
	}
	return tab.flush()
}
