package main

import (
	"fmt"
	"strings"
)

// typical turns the peers bootstrap into a typical sidecar's: a file
// access log at logPath in Envoy's default format, 20 routes of the kinds
// a sidecar is given (the benchmark's request, GET / with no special
// header, matches only the last, a catch-all prefix, so every other
// matcher is tried and refused first), the health_check filter answering
// /healthz itself before the router, and stats with the default tag
// extractors and a fixed tag.
func typical(bootstrap, logPath string) string {
	var routes strings.Builder
	for i := range 5 {
		fmt.Fprintf(&routes, "              - match: {prefix: /api/v%d/}\n                route: {cluster: up}\n", i+1)
		fmt.Fprintf(&routes, "              - match: {path: /static/asset-%d.js}\n                route: {cluster: up}\n", i)
		fmt.Fprintf(&routes, "              - match: {safe_regex: {regex: \"/users/[0-9]+/orders/%d\"}}\n                route: {cluster: up}\n", i)
		if i < 4 {
			fmt.Fprintf(&routes, "              - match: {prefix: /, headers: [{name: x-canary, string_match: {exact: \"v%d\"}}]}\n                route: {cluster: up}\n", i)
		}
	}
	routes.WriteString("              - match: {prefix: /}\n                route: {cluster: up}\n")
	replace := func(s, old, new string) string {
		if !strings.Contains(s, old) {
			panic("h1count: the peers bootstrap has no " + old)
		}
		return strings.Replace(s, old, new, 1)
	}
	bootstrap = replace(bootstrap, "              - match: {prefix: /}\n                route: {cluster: up}\n", routes.String())
	bootstrap = replace(bootstrap, "          http_filters:\n", `          access_log:
          - name: envoy.access_loggers.file
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
              path: `+logPath+`
          http_filters:
          - name: envoy.filters.http.health_check
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.health_check.v3.HealthCheck
              pass_through_mode: false
              headers: [{name: ":path", string_match: {exact: /healthz}}]
`)
	return replace(bootstrap, "admin:\n", `stats_config:
  use_all_default_tags: true
  stats_tags:
  - {tag_name: pod, fixed_value: "web-7d4b9c-x2p4q"}
admin:
`)
}
