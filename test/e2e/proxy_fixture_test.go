package e2e

import (
	"encoding/json"
	"maps"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// proxySpec describes the most common bootstrap of a spec: one HTTP
// listener on 127.0.0.1 whose connection manager routes to STATIC clusters
// on loopback, each part open to extra fields. Extra fields are YAML flow
// mappings or lists ("{add_user_agent: true}"), so a spec writes only what
// it is about; they merge into the defaults mapping by mapping, so that
// "{route_config: {internal_only_headers: [x]}}" keeps the routes.
type proxySpec struct {
	Port int
	// HCM are extra connection manager fields; Listener extra listener
	// fields; Top extra bootstrap fields (node, layered_runtime...).
	HCM, Listener, Top string
	// Routes is the virtual host's routes, a YAML flow list; empty routes
	// every request to the first cluster.
	Routes string
	// Hosts are virtual hosts before the one of Routes (whose domain is
	// "*"), a YAML flow list; VirtualHost extra fields of the latter.
	Hosts, VirtualHost string
	// Filters are the HTTP filters before the router, a YAML flow list
	// (http_filters in HCM replaces the whole list, router included).
	Filters string
	// Router are extra fields of the router's typed_config.
	Router string
	// Clusters are the upstream clusters by name, in order, each with its
	// port on 127.0.0.1 and extra cluster fields.
	Clusters []proxyCluster
	// More are further listeners, each built as this one's (give each
	// its own name in Listener; their Top and More are not read), whose
	// Clusters join this one's.
	More []proxySpec
}

// proxyCluster is one STATIC cluster of a proxySpec, with one endpoint.
type proxyCluster struct {
	Name string
	Port int
	// Extra are extra cluster fields; Endpoint extra fields of the
	// endpoint's lb_endpoints entry (metadata, health_status, or
	// {endpoint: {hostname: h}}).
	Extra, Endpoint string
}

// YAML renders the bootstrap (as JSON, which YAML reads).
func (p proxySpec) YAML() string {
	GinkgoHelper()
	var listeners, clusters []any
	for _, l := range append([]proxySpec{p}, p.More...) {
		listeners = append(listeners, l.listener())
		for _, c := range l.Clusters {
			clusters = append(clusters, c.object())
		}
	}
	static := map[string]any{"listeners": listeners}
	if len(clusters) > 0 {
		static["clusters"] = clusters
	}
	b := merge(map[string]any{
		"admin":            map[string]any{"address": socketAddress(0)},
		"static_resources": static,
	}, p.Top)
	out, err := json.Marshal(b)
	Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// object is the cluster as a bootstrap holds it.
func (c proxyCluster) object() map[string]any {
	GinkgoHelper()
	return merge(map[string]any{
		"name":            c.Name,
		"connect_timeout": "1s",
		"load_assignment": map[string]any{"cluster_name": c.Name, "endpoints": []any{map[string]any{
			"lb_endpoints": []any{merge(map[string]any{"endpoint": map[string]any{"address": socketAddress(c.Port)}}, c.Endpoint)},
		}}},
	}, c.Extra)
}

// listener is the spec's listener.
func (p proxySpec) listener() map[string]any {
	GinkgoHelper()
	routes := p.Routes
	if routes == "" {
		Expect(p.Clusters).NotTo(BeEmpty(), "no routes and no cluster to route to")
		routes = `[{match: {prefix: /}, route: {cluster: ` + p.Clusters[0].Name + `}}]`
	}
	filters := append(flowList(p.Filters), map[string]any{
		"name":         "envoy.filters.http.router",
		"typed_config": merge(map[string]any{"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}, p.Router),
	})
	hcm := merge(map[string]any{
		"@type":       "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
		"stat_prefix": "l",
		"route_config": map[string]any{"virtual_hosts": append(flowList(p.Hosts), merge(map[string]any{
			"name": "all", "domains": []any{"*"}, "routes": flowList(routes),
		}, p.VirtualHost))},
		"http_filters": filters,
	}, p.HCM)
	return merge(map[string]any{
		"name":    "l",
		"address": socketAddress(p.Port),
		"filter_chains": []any{map[string]any{"filters": []any{map[string]any{
			"name": "envoy.filters.network.http_connection_manager", "typed_config": hcm,
		}}}},
	}, p.Listener)
}

// socketAddress is a loopback address object.
func socketAddress(port int) map[string]any {
	return map[string]any{"socket_address": map[string]any{"address": "127.0.0.1", "port_value": port}}
}

// flowYAML decodes a YAML flow value; "" is nil.
func flowYAML(s string) any {
	GinkgoHelper()
	if s == "" {
		return nil
	}
	var v any
	Expect(yaml.Unmarshal([]byte(s), &v)).To(Succeed(), "YAML: %s", s)
	return v
}

// flowList decodes a YAML flow list; "" is an empty list.
func flowList(s string) []any {
	GinkgoHelper()
	if s == "" {
		return nil
	}
	l, ok := flowYAML(s).([]any)
	Expect(ok).To(BeTrue(), "not a list: %s", s)
	return slices.Clone(l)
}

// merge merges the YAML flow mapping extra into base and returns base: a
// mapping in both merges field by field, any other value of extra
// replaces base's.
func merge(base map[string]any, extra string) map[string]any {
	GinkgoHelper()
	if extra == "" {
		return base
	}
	m, ok := flowYAML(extra).(map[string]any)
	Expect(ok).To(BeTrue(), "not a mapping: %s", extra)
	mergeMaps(base, m)
	return base
}

// mergeMaps is merge on decoded mappings.
func mergeMaps(base, extra map[string]any) {
	for k, v := range extra {
		b, bok := base[k].(map[string]any)
		e, eok := v.(map[string]any)
		if bok && eok {
			mergeMaps(b, e)
			continue
		}
		base[k] = v
	}
}

// withType is a typed_config: the YAML flow mapping fields with "@type".
func withType(typeURL, fields string) string {
	GinkgoHelper()
	m := merge(map[string]any{"@type": typeURL}, fields)
	out, err := json.Marshal(m)
	Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// httpFilter is one HTTP filter entry, a YAML flow mapping for
// proxySpec.Filters: its name and a typed_config of typeURL with the
// fields of the YAML flow mapping fields.
func httpFilter(name, typeURL, fields string) string {
	GinkgoHelper()
	return `{name: ` + name + `, typed_config: ` + withType(typeURL, fields) + `}`
}

// httpProtocolOptions are the cluster fields (for proxyCluster.Extra)
// that set the cluster's HttpProtocolOptions to the YAML flow mapping
// fields.
func httpProtocolOptions(fields string) string {
	GinkgoHelper()
	return `{typed_extension_protocol_options: {envoy.extensions.upstreams.http.v3.HttpProtocolOptions: ` +
		withType("type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions", fields) + `}}`
}

// http2Upstream is the cluster Extra that makes a cluster speak HTTP/2
// (prior knowledge) to its hosts when h2 is set, "" when it is not.
func http2Upstream(h2 bool) string {
	GinkgoHelper()
	if !h2 {
		return ""
	}
	return httpProtocolOptions(`{explicit_http_config: {http2_protocol_options: {}}}`)
}

// stdoutLog is one access log entry, a YAML flow mapping for an
// access_log list: the stdout logger writing the text format format.
func stdoutLog(format string) string {
	GinkgoHelper()
	return textLog("envoy.access_loggers.stdout", "type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog", nil, format)
}

// fileLog is stdoutLog for a file logger writing to path.
func fileLog(path, format string) string {
	GinkgoHelper()
	return textLog("envoy.access_loggers.file", "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog", map[string]any{"path": path}, format)
}

// textLog is an access log entry: the logger name whose typed_config of
// typeURL has the fields and the text format format.
func textLog(name, typeURL string, fields map[string]any, format string) string {
	GinkgoHelper()
	config := map[string]any{
		"@type":      typeURL,
		"log_format": map[string]any{"text_format_source": map[string]any{"inline_string": format}},
	}
	maps.Copy(config, fields)
	out, err := json.Marshal(map[string]any{"name": name, "typed_config": config})
	Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// h2cOptions are the cluster fields (for proxyCluster.Extra) of a cluster
// that speaks HTTP/2 in clear text to its upstream.
func h2cOptions() string {
	GinkgoHelper()
	return httpProtocolOptions("{explicit_http_config: {http2_protocol_options: {}}}")
}
