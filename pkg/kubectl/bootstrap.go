package kubectl

import (
	"strconv"
	"strings"
)

// bootstrapDump is the part of BootstrapConfigDump the table shows.
type bootstrapDump struct {
	Bootstrap struct {
		Node *struct {
			ID      string `json:"id"`
			Cluster string `json:"cluster"`
		} `json:"node"`
		Admin *struct {
			Address address `json:"address"`
		} `json:"admin"`
		StaticResources struct {
			Listeners []struct {
				Name string `json:"name"`
			} `json:"listeners"`
			Clusters []struct {
				Name string `json:"name"`
			} `json:"clusters"`
			Secrets []struct{} `json:"secrets"`
		} `json:"static_resources"`
		DynamicResources map[string]any `json:"dynamic_resources"`
		LayeredRuntime   *struct {
			Layers []struct {
				Name string `json:"name"`
			} `json:"layers"`
		} `json:"layered_runtime"`
		StatsSinks []struct {
			Name string `json:"name"`
		} `json:"stats_sinks"`
	} `json:"bootstrap"`
	LastUpdated string `json:"last_updated"`
}

// bootstrapTable prints the bootstrap's main facts, one per row.
func bootstrapTable(a *app, raw []byte) error {
	var d bootstrapDump
	if err := parseSection(raw, bootstrapDumpType, &d); err != nil {
		return err
	}
	b := d.Bootstrap
	tab := newTable(a.stdout, "FIELD", "VALUE")
	if b.Node != nil {
		tab.row("node.id", b.Node.ID)
		tab.row("node.cluster", b.Node.Cluster)
	}
	if b.Admin != nil {
		tab.row("admin.address", b.Admin.Address.String())
	}
	var listeners, clusters []string
	for _, l := range b.StaticResources.Listeners {
		listeners = append(listeners, l.Name)
	}
	for _, c := range b.StaticResources.Clusters {
		clusters = append(clusters, c.Name)
	}
	tab.row("static_resources.listeners", countedList(listeners))
	tab.row("static_resources.clusters", countedList(clusters))
	tab.row("static_resources.secrets", strconv.Itoa(len(b.StaticResources.Secrets)))
	var sources []string
	for _, k := range []string{"lds_config", "cds_config", "ads_config"} {
		if _, ok := b.DynamicResources[k]; ok {
			sources = append(sources, k)
		}
	}
	tab.row("dynamic_resources", strings.Join(sources, ","))
	if b.LayeredRuntime != nil {
		var layers []string
		for _, l := range b.LayeredRuntime.Layers {
			layers = append(layers, l.Name)
		}
		tab.row("layered_runtime.layers", strings.Join(layers, ","))
	}
	var sinks []string
	for _, s := range b.StatsSinks {
		sinks = append(sinks, shortName(s.Name))
	}
	tab.row("stats_sinks", strings.Join(sinks, ","))
	loaded := a.lastUpdated(d.LastUpdated)
	if loaded != "" {
		loaded += " ago"
	}
	tab.row("loaded", loaded)
	return tab.flush()
}

// countedList is "N (a,b,c)", or "0".
func countedList(names []string) string {
	if len(names) == 0 {
		return "0"
	}
	return strconv.Itoa(len(names)) + " (" + strings.Join(names, ",") + ")"
}
