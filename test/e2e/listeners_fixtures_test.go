package e2e

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
)

// directChain is a filter chain (YAML flow style) whose connection manager
// answers every request with 200 and body; match is its filter_chain_match
// ("" for none).
func directChain(body, match string) string {
	m := ""
	if match != "" {
		m = "filter_chain_match: " + match + ", "
	}
	return fmt.Sprintf(`{%sfilters: [{name: envoy.filters.network.http_connection_manager, typed_config: {`+
		`"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, `+
		`stat_prefix: %q, route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: "/"}, `+
		`direct_response: {status: 200, body: {inline_string: %q}}}]}]}, `+
		`http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}]}`,
		m, "chain_"+strings.ReplaceAll(body, " ", "_"), body)
}

// proxyChain is a filter chain (YAML flow style) whose connection manager
// routes every request to the cluster "upstream".
func proxyChain() string {
	return `{filters: [{name: envoy.filters.network.http_connection_manager, typed_config: {` +
		`"@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, ` +
		`stat_prefix: proxy, route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: "/"}, ` +
		`route: {cluster: upstream}}]}]}, ` +
		`http_filters: [{name: envoy.filters.http.router, typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}}]}}]}`
}

// upstreamCluster is a static_resources.clusters entry (YAML, two-space
// list indentation) named "upstream" with one endpoint on 127.0.0.1:port.
func upstreamCluster(port int) string {
	return fmt.Sprintf("  clusters:\n  - {name: upstream, type: STATIC, connect_timeout: 1s, load_assignment: {cluster_name: upstream, "+
		"endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}}]}]}}\n", port)
}

// listenerDef is one listener of a listeners bootstrap.
type listenerDef struct {
	Name      string
	Direction string // traffic_direction, "" for none
	Port      int    // 0 lets the kernel pick
	Fields    string // more listener fields, YAML flow style ("a: 1, b: 2")
	Chains    []string
	Default   string // default_filter_chain, "" for none
}

// listenersBootstrap is a bootstrap with an admin on 127.0.0.1 (port 0)
// and the given listeners on 127.0.0.1.
func listenersBootstrap(ls ...listenerDef) string {
	var b strings.Builder
	b.WriteString("admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}\nstatic_resources:\n  listeners:\n")
	for _, l := range ls {
		b.WriteString("  - " + l.flowYAML("") + "\n")
	}
	return b.String()
}

// flowYAML writes the listener as one YAML flow mapping on 127.0.0.1,
// starting with head (such as an "@type" entry) when it is not empty.
func (l listenerDef) flowYAML(head string) string {
	var b strings.Builder
	b.WriteString("{" + head)
	fmt.Fprintf(&b, "name: %q, address: {socket_address: {address: 127.0.0.1, port_value: %d}}", l.Name, l.Port)
	if l.Direction != "" {
		fmt.Fprintf(&b, ", traffic_direction: %s", l.Direction)
	}
	if l.Fields != "" {
		b.WriteString(", " + l.Fields)
	}
	if len(l.Chains) > 0 {
		b.WriteString(", filter_chains: [" + strings.Join(l.Chains, ", ") + "]")
	}
	if l.Default != "" {
		b.WriteString(", default_filter_chain: " + l.Default)
	}
	b.WriteString("}")
	return b.String()
}

// plainListener is a listener answering body, in the given direction.
func plainListener(name, direction, body string) listenerDef {
	return listenerDef{Name: name, Direction: direction, Chains: []string{directChain(body, "")}}
}

// listenerStatuses reads /listeners?format=json.
func listenerStatuses(s *Sidecar) []*adminv3.ListenerStatus {
	GinkgoHelper()
	r := s.Get("/listeners?format=json")
	Expect(r.Status).To(Equal(200))
	var ls adminv3.Listeners
	Expect(protojson.Unmarshal([]byte(r.Body), &ls)).To(Succeed(), r.Body)
	return ls.GetListenerStatuses()
}

// listenerAddr is the bound main address of the named listener, as
// /listeners reports it.
func listenerAddr(s *Sidecar, name string) string {
	GinkgoHelper()
	for _, st := range listenerStatuses(s) {
		if st.GetName() == name {
			sa := st.GetLocalAddress().GetSocketAddress()
			return net.JoinHostPort(sa.GetAddress(), fmt.Sprint(sa.GetPortValue()))
		}
	}
	Fail("no listener " + name + " in /listeners")
	return ""
}

// accepts reports whether addr accepts a TCP connection.
func accepts(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// statValue returns the value of one counter or gauge from /stats.
func statValue(s *Sidecar, name string) string {
	GinkgoHelper()
	r := s.Get("/stats?filter=" + url.QueryEscape("^"+regexp.QuoteMeta(name)+"$"))
	Expect(r.Status).To(Equal(200))
	for line := range strings.SplitSeq(r.Body, "\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			return v
		}
	}
	return ""
}

// portPattern matches the ports of 127.0.0.1 addresses in /listeners
// outputs, which golden files show as PORT.
var portPattern = regexp.MustCompile(`(127\.0\.0\.1:|"port_value": )[0-9]+`)

// maskPorts replaces the OS-chosen ports of an output with PORT.
func maskPorts(s string) string { return portPattern.ReplaceAllString(s, "${1}PORT") }
