package kubectl

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// clusterStatuses is the part of /clusters?format=json the endpoints table
// shows: every host of every cluster, as the cluster manager sees it now.
type clusterStatuses struct {
	Clusters []struct {
		Name  string `json:"name"`
		Hosts []struct {
			Address  address `json:"address"`
			Hostname string  `json:"hostname"`
			Stats    []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"stats"`
			Health   map[string]any `json:"health_status"`
			Weight   uint32         `json:"weight"`
			Priority uint32         `json:"priority"`
		} `json:"host_statuses"`
	} `json:"cluster_statuses"`
}

// health is a host's health: its EDS status (HEALTHY when left out), or
// UNHEALTHY with the failed checks that make it so.
func health(status map[string]any) string {
	eds, _ := status["eds_health_status"].(string)
	var failed []string
	for k, v := range status {
		if b, ok := v.(bool); ok && b {
			failed = append(failed, k)
		}
	}
	if eds == "" {
		eds = "HEALTHY"
	}
	if len(failed) == 0 {
		return eds
	}
	if eds == "HEALTHY" {
		eds = "UNHEALTHY"
	}
	slices.Sort(failed)
	return eds + " (" + strings.Join(failed, ",") + ")"
}

// endpointsTable prints every host of every cluster from /clusters, which
// has their live health and counters (/config_dump's EDS section has only
// what EDS sent).
func endpointsTable(a *app, body []byte) error {
	var d clusterStatuses
	if err := json.Unmarshal(body, &d); err != nil {
		return fmt.Errorf("parse /clusters: %w", err)
	}
	tab := newTable(a.stdout, "ENDPOINT", "CLUSTER", "HEALTH", "WEIGHT", "PRIORITY", "RQ TOTAL", "RQ ERROR", "CX ACTIVE")
	for _, c := range d.Clusters {
		for _, h := range c.Hosts {
			stats := map[string]string{}
			for _, s := range h.Stats {
				stats[s.Name] = s.Value
			}
			tab.row(h.Address.String(), c.Name, health(h.Health), strconv.FormatUint(uint64(h.Weight), 10), strconv.FormatUint(uint64(h.Priority), 10),
				zero(stats["rq_total"]), zero(stats["rq_error"]), zero(stats["cx_active"]))
		}
	}
	return tab.flush()
}

// zero is a stat value, which JSON leaves out when it is 0.
func zero(v string) string {
	if v == "" {
		return "0"
	}
	return v
}
