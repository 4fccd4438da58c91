package stats

import (
	"fmt"
	"strings"
)

// Naming selects the product word in Prometheus names: the metric prefix,
// the labels of the default tags (and of any tag named "proxy.*" or
// "envoy.*", the two spellings being aliases) and the few stat names that
// carry the product's name.
type Naming uint8

// The namings.
const (
	// NamingProxy is the neutral naming (the default): proxy_ prefix,
	// proxy_cluster_name labels.
	NamingProxy Naming = iota
	// NamingEnvoy names everything exactly as Envoy does: envoy_ prefix,
	// envoy_cluster_name labels, envoy_server_envoy_bug_failures.
	NamingEnvoy
)

// ParseNaming parses "proxy" or "envoy".
func ParseNaming(s string) (Naming, error) {
	switch s {
	case "proxy":
		return NamingProxy, nil
	case "envoy":
		return NamingEnvoy, nil
	}
	return 0, fmt.Errorf("unknown naming %q: want proxy or envoy", s)
}

// String is the naming's command-line spelling.
func (n Naming) String() string {
	if n == NamingEnvoy {
		return "envoy"
	}
	return "proxy"
}

// word is the product word of the naming.
func (n Naming) word() string { return n.String() }

// neutralStatNames are the tag-extracted stat names that carry the
// neutral word where Envoy's carry "envoy", with Envoy's spelling.
var neutralStatNames = map[string]string{
	"server.proxy_bug_failures":  "server.envoy_bug_failures",
	"server.proxy_notifications": "server.envoy_notifications",
}

// metricName returns the Prometheus name of a tag-extracted stat name
// under naming n.
func (n Naming) metricName(stat []byte) string {
	name := string(stat)
	if n == NamingEnvoy {
		if e, ok := neutralStatNames[name]; ok {
			name = e
		}
	}
	return string(appendSanitized([]byte(n.word()+"_"), name))
}

// appendLabel appends the Prometheus label of a tag name: the tag names
// of both spellings ("proxy.cluster_name", "envoy.cluster_name") take the
// naming's word; any other tag name is only sanitized.
func (n Naming) appendLabel(dst []byte, tag string) []byte {
	if rest, ok := strings.CutPrefix(tag, "proxy."); ok && n == NamingEnvoy {
		dst = append(dst, "envoy_"...)
		return appendSanitized(dst, rest)
	}
	return appendSanitized(dst, tag)
}
