package kubectl

import (
	"strconv"
)

// clustersDump is the part of ClustersConfigDump the table shows.
type clustersDump struct {
	Static []struct {
		Cluster     clusterConfig `json:"cluster"`
		LastUpdated string        `json:"last_updated"`
	} `json:"static_clusters"`
	DynamicActive  []dynamicCluster `json:"dynamic_active_clusters"`
	DynamicWarming []dynamicCluster `json:"dynamic_warming_clusters"`
}

// dynamicCluster is a cluster from CDS.
type dynamicCluster struct {
	VersionInfo string        `json:"version_info"`
	Cluster     clusterConfig `json:"cluster"`
	LastUpdated string        `json:"last_updated"`
}

// clusterConfig is the part of a Cluster the table shows.
type clusterConfig struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	ClusterType *struct {
		Name string `json:"name"`
	} `json:"cluster_type"`
	LbPolicy       string `json:"lb_policy"`
	LoadAssignment *struct {
		Endpoints []struct {
			LbEndpoints []struct{} `json:"lb_endpoints"`
		} `json:"endpoints"`
	} `json:"load_assignment"`
}

// kind is the cluster's discovery type. JSON leaves out the enum's
// default, STATIC.
func (c clusterConfig) kind() string {
	switch {
	case c.ClusterType != nil:
		return c.ClusterType.Name
	case c.Type == "":
		return "STATIC"
	default:
		return c.Type
	}
}

// lbPolicy is the load balancing policy, ROUND_ROBIN when left out.
func (c clusterConfig) lbPolicy() string {
	if c.LbPolicy == "" {
		return "ROUND_ROBIN"
	}
	return c.LbPolicy
}

// endpoints counts the configured endpoints ("" without a load
// assignment, as for EDS).
func (c clusterConfig) endpoints() string {
	if c.LoadAssignment == nil {
		return ""
	}
	n := 0
	for _, l := range c.LoadAssignment.Endpoints {
		n += len(l.LbEndpoints)
	}
	return strconv.Itoa(n)
}

// clustersTable prints the proxy's clusters.
func clustersTable(a *app, raw []byte) error {
	var d clustersDump
	if err := parseSection(raw, clustersDumpType, &d); err != nil {
		return err
	}
	tab := newTable(a.stdout, "NAME", "TYPE", "LB POLICY", "ENDPOINTS", "SOURCE", "VERSION", "LAST UPDATED")
	for _, c := range d.Static {
		tab.row(c.Cluster.Name, c.Cluster.kind(), c.Cluster.lbPolicy(), c.Cluster.endpoints(), "static", "", a.lastUpdated(c.LastUpdated))
	}
	for _, group := range []struct {
		source   string
		clusters []dynamicCluster
	}{{"dynamic", d.DynamicActive}, {"dynamic (warming)", d.DynamicWarming}} {
		for _, c := range group.clusters {
			tab.row(c.Cluster.Name, c.Cluster.kind(), c.Cluster.lbPolicy(), c.Cluster.endpoints(), group.source, c.VersionInfo, a.lastUpdated(c.LastUpdated))
		}
	}
	return tab.flush()
}
