// Package benchkit holds what the load programs under test/bench share:
// a free loopback port and a counter read from a sidecar's admin /stats.
package benchkit

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// FreePort returns a loopback port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Counter reads one stat's value from the admin at adminURL
// ("http://host:port").
func Counter(adminURL, stat string) (int, error) {
	r, err := http.Get(adminURL + "/stats?filter=^" + regexp.QuoteMeta(stat) + "$")
	if err != nil {
		return 0, err
	}
	defer r.Body.Close()
	sc := bufio.NewScanner(r.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), stat+": "); ok {
			return strconv.Atoi(v)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("stat %s not found", stat)
}

// Bootstrap is the sidecar configuration the HTTP load programs share: one
// listener on 127.0.0.1:listenPort (stat prefix "ingress") routing every
// request to cluster "up", a static host at upstreamHost:upstreamPort. The
// admin takes any free port, and stats are flushed rarely, so that a flush
// does not land inside a measurement.
func Bootstrap(listenPort int, upstreamHost string, upstreamPort int) string {
	return fmt.Sprintf(`stats_flush_interval: 120s
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: 0}}
static_resources:
  listeners:
  - name: ingress
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: ingress
          codec_type: AUTO
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: /}
                route: {cluster: up}
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  clusters:
  - name: up
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: up
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: %s, port_value: %d}}}
`, listenPort, upstreamHost, upstreamPort)
}
