package router

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/internal/golden"
)

// vhost wraps one route in a configuration with a catch-all virtual host.
func vhost(route string) string {
	return "virtual_hosts: [{name: v, domains: ['*'], routes: [" + route + "]}]"
}

// TestCompileErrors checks that every refused configuration gets an error
// naming its field path; the messages are in testdata/compile_errors.golden.
func TestCompileErrors(t *testing.T) {
	tests := map[string]string{
		"duplicate domain":                 "virtual_hosts: [{name: a, domains: [x]}, {name: b, domains: [z, X]}]",
		"duplicate catch-all":              "virtual_hosts: [{name: a, domains: ['*']}, {name: b, domains: ['*']}]",
		"missing match":                    vhost("{direct_response: {status: 200}}"),
		"missing path specifier":           vhost("{match: {}, direct_response: {status: 200}}"),
		"path match policy without config": vhost("{match: {path_match_policy: {name: x}}, direct_response: {status: 200}}"),
		"bad path template":                vhost("{match: {path_match_policy: " + uriTemplateYAML("/a//{b}") + "}, direct_response: {status: 200}}"),
		"path rewrite without template":    vhost("{match: {prefix: /}, route: {cluster: c, path_rewrite_policy: " + uriRewriteYAML("/{a}") + "}}"),
		"path rewrite unknown variable":    vhost("{match: {path_match_policy: " + uriTemplateYAML("/{a}") + "}, route: {cluster: c, path_rewrite_policy: " + uriRewriteYAML("/{b}") + "}}"),
		"bad path rewrite":                 vhost("{match: {path_match_policy: " + uriTemplateYAML("/{a}") + "}, route: {cluster: c, path_rewrite_policy: " + uriRewriteYAML("/{a}?q") + "}}"),
		"prefix rewrite with template":     vhost("{match: {path_match_policy: " + uriTemplateYAML("/{a}") + "}, route: {cluster: c, prefix_rewrite: /x}}"),
		"hedge initial requests":           vhost("{match: {prefix: /}, route: {cluster: c, hedge_policy: {initial_requests: 2}}}"),
		"hedge additional chance":          "virtual_hosts: [{name: v, domains: ['*'], hedge_policy: {initial_requests: 1, additional_request_chance: {numerator: 5}}}]",
		"path_rewrite with prefix_rewrite": vhost("{match: {prefix: /a}, route: {cluster: c, prefix_rewrite: /b, path_rewrite: /c}}"),
		"bad path_rewrite format":          vhost("{match: {prefix: /a}, route: {cluster: c, path_rewrite: '/x/%NOPE%'}}"),
		"bad host_rewrite format":          vhost("{match: {prefix: /a}, route: {cluster: c, host_rewrite: '%REQ(%'}}"),
		"bad redirect path_rewrite":        vhost("{match: {prefix: /a}, redirect: {path_rewrite: '/%UNKNOWN_OP%'}}"),
		"both buffer limits":               vhost("{match: {prefix: /}, per_request_buffer_limit_bytes: 1, request_body_buffer_limit: 2, route: {cluster: c}}"),
		"two path rewrites":                vhost("{match: {path_match_policy: " + uriTemplateYAML("/{a}") + "}, route: {cluster: c, regex_rewrite: {pattern: {regex: a}, substitution: b}, path_rewrite_policy: " + uriRewriteYAML("/{a}") + "}}"),
		"bad path regex":                   vhost("{match: {safe_regex: {regex: '(a'}}, direct_response: {status: 200}}"),
		"regex only valid when wrapped":    vhost("{match: {safe_regex: {regex: 'a)(b'}}, direct_response: {status: 200}}"),
		"separated prefix with slash":      vhost("{match: {path_separated_prefix: /api/}, direct_response: {status: 200}}"),
		"bad header regex":                 vhost("{match: {prefix: /, headers: [{name: a}, {name: b, safe_regex_match: {regex: '*'}}]}, direct_response: {status: 200}}"),
		"bad header string regex":          vhost("{match: {prefix: /, headers: [{name: b, string_match: {safe_regex: {regex: '['}}}]}, direct_response: {status: 200}}"),
		"empty string matcher":             vhost("{match: {prefix: /, headers: [{name: b, string_match: {ignore_case: true}}]}, direct_response: {status: 200}}"),
		"empty range":                      vhost("{match: {prefix: /, headers: [{name: b, range_match: {start: 5, end: 5}}]}, direct_response: {status: 200}}"),
		"bad query regex":                  vhost("{match: {prefix: /, query_parameters: [{name: q, string_match: {safe_regex: {regex: '+'}}}]}, direct_response: {status: 200}}"),
		"missing action":                   vhost("{match: {prefix: /}}"),
		"unsupported action":               vhost("{match: {prefix: /}, filter_action: {}}"),
		"missing cluster":                  vhost("{match: {prefix: /}, route: {timeout: 1s}}"),
		"bad host rewrite regex":           vhost("{match: {prefix: /}, route: {cluster: c, host_rewrite_path_regex: {pattern: {regex: '(('}, substitution: b}}}"),
		"host rewrite group out of range":  vhost(`{match: {prefix: /}, route: {cluster: c, host_rewrite_path_regex: {pattern: {regex: '(a)'}, substitution: '\2'}}}`),
		"runtime fraction denominator":     vhost("{match: {prefix: /, runtime_fraction: {default_value: {numerator: 1, denominator: 7}}}, route: {cluster: c}}"),
		"mirror without cluster":           vhost("{match: {prefix: /}, route: {cluster: c, request_mirror_policies: [{cluster: s}, {runtime_fraction: {default_value: {numerator: 1}}}]}}"),
		"mirror with both clusters":        vhost("{match: {prefix: /}, route: {cluster: c, request_mirror_policies: [{cluster: s, cluster_header: x-s}]}}"),
		"mirror fraction denominator":      vhost("{match: {prefix: /}, route: {cluster: c, request_mirror_policies: [{cluster: s, runtime_fraction: {default_value: {numerator: 1, denominator: 7}}}]}}"),
		"mirror mutation of host":          vhost("{match: {prefix: /}, route: {cluster: c, request_mirror_policies: [{cluster: s, request_headers_mutations: [{remove: x-a}, {append: {header: {key: host, value: h}}}]}]}}"),
		"mirror remove_on_match regex":     vhost("{match: {prefix: /}, route: {cluster: c, request_mirror_policies: [{cluster: s, request_headers_mutations: [{remove_on_match: {key_matcher: {safe_regex: {regex: '('}}}}]}]}}"),
		"mirror mutation without action":   vhost("{match: {prefix: /}, route: {cluster: c, request_mirror_policies: [{cluster: s, request_headers_mutations: [{}]}]}}"),
		"virtual host mirror":              "virtual_hosts: [{name: v, domains: ['*'], request_mirror_policies: [{}], routes: [{match: {prefix: /}, route: {cluster: c}}]}]",
		"route configuration mirror":       "request_mirror_policies: [{cluster: s, cluster_header: x}]",
		"virtual cluster without headers":  "virtual_hosts: [{name: v, domains: ['*'], virtual_clusters: [{name: vc}], routes: [{match: {prefix: /}, route: {cluster: c}}]}]",
		"virtual cluster bad header":       "virtual_hosts: [{name: v, domains: ['*'], virtual_clusters: [{name: vc, headers: [{name: a, safe_regex_match: {regex: '('}}]}], routes: [{match: {prefix: /}, route: {cluster: c}}]}]",
		"internal only host":               "internal_only_headers: [x-a, Host]\n" + vhost("{match: {prefix: /}, route: {cluster: c}}"),
		"rewrites together":                vhost("{match: {prefix: /}, route: {cluster: c, prefix_rewrite: /x, regex_rewrite: {pattern: {regex: a}, substitution: b}}}"),
		"bad rewrite regex":                vhost("{match: {prefix: /}, route: {cluster: c, regex_rewrite: {pattern: {regex: '(('}, substitution: b}}}"),
		"rewrite group out of range":       vhost(`{match: {prefix: /}, route: {cluster: c, regex_rewrite: {pattern: {regex: '(a)'}, substitution: '\2'}}}`),
		"rewrite bad escape":               vhost(`{match: {prefix: /}, route: {cluster: c, regex_rewrite: {pattern: {regex: 'a'}, substitution: '\n'}}}`),
		"rewrite lone backslash":           vhost(`{match: {prefix: /}, route: {cluster: c, regex_rewrite: {pattern: {regex: 'a'}, substitution: 'x\'}}}`),
		"weights sum to zero":              vhost("{match: {prefix: /}, route: {weighted_clusters: {clusters: [{name: a, weight: 0}]}}}"),
		"no weighted clusters":             vhost("{match: {prefix: /}, route: {weighted_clusters: {}}}"),
		"weighted cluster without name":    vhost("{match: {prefix: /}, route: {weighted_clusters: {clusters: [{name: a, weight: 1}, {weight: 1}]}}}"),
		"wrong total weight":               vhost("{match: {prefix: /}, route: {weighted_clusters: {clusters: [{name: a, weight: 1}], total_weight: 2}}}"),
		"bad timeout":                      vhost("{match: {prefix: /}, route: {cluster: c, timeout: -1s}}"),
		"direct status out of range":       vhost("{match: {prefix: /}, direct_response: {status: 99}}"),
		"direct body from a missing file":  vhost("{match: {prefix: /}, direct_response: {status: 200, body: {filename: /nonexistent/outrigger/body}}}"),
		"direct body too large":            "max_direct_response_body_size_bytes: 3\n" + vhost("{match: {prefix: /}, direct_response: {status: 200, body: {inline_string: four}}}"),
		"redirect port out of range":       vhost("{match: {prefix: /}, redirect: {port_redirect: 70000}}"),
		"redirect bad regex":               vhost("{match: {prefix: /}, redirect: {regex_rewrite: {pattern: {regex: '['}, substitution: x}}}"),
		"redirect bad code":                vhost("{match: {prefix: /}, redirect: {response_code: 9}}"),
		"add host header":                  vhost("{match: {prefix: /}, route: {cluster: c}, request_headers_to_add: [{header: {key: Host, value: x}}]}"),
		"remove pseudo-header":             vhost("{match: {prefix: /}, route: {cluster: c}, response_headers_to_remove: [a, ':status']}"),
		"raw header value beside value":    vhost("{match: {prefix: /}, route: {cluster: c}, request_headers_to_add: [{header: {key: x, value: 'z', raw_value: eQ==}}]}"),
		"raw header value with a CR":       vhost("{match: {prefix: /}, route: {cluster: c}, request_headers_to_add: [{header: {key: x, raw_value: eQ15}}]}"),
		"bad route tracing operation":      vhost("{match: {prefix: /}, route: {cluster: c}, tracing: {operation: 'x %NOPE%'}}"),
		"unknown header operator":          vhost("{match: {prefix: /}, route: {cluster: c}, response_headers_to_add: [{header: {key: x, value: ok}}, {header: {key: x-y, value: '%NO_SUCH_OPERATOR%'}}]}"),
		"append and append_action":         vhost("{match: {prefix: /}, route: {cluster: c}, request_headers_to_add: [{header: {key: x, value: v}, append: true, append_action: ADD_IF_ABSENT}]}"),
		"virtual host header error":        "virtual_hosts: [{name: v, domains: ['*'], request_headers_to_remove: [':path']}]",
		"global header error":              "response_headers_to_add: [{header: {key: '', value: v}}]",
		"every problem at once": "virtual_hosts: [{name: a, domains: [x], routes: [{match: {safe_regex: {regex: '(a'}}, direct_response: {status: 200}}, " +
			"{match: {prefix: /}, route: {cluster: c, timeout: -1s}}]}, " +
			"{name: b, domains: [X], request_headers_to_remove: [':path'], routes: [{match: {prefix: /}}]}]",
		"error in a later route": vhost("{match: {prefix: /a}, direct_response: {status: 200}}, {match: {prefix: /b}, route: {cluster: c, idle_timeout: -0.5s}}"),
	}
	names := make([]string, 0, len(tests))
	for name := range tests {
		names = append(names, name)
	}
	slices.Sort(names)
	var out strings.Builder
	for _, name := range names {
		_, err := Compile(parseRC(t, tests[name]))
		if err == nil {
			t.Errorf("%s: Compile accepted %s", name, tests[name])
			continue
		}
		fmt.Fprintf(&out, "%s:\n  %v\n", name, err)
	}
	golden.Check(t, "testdata/compile_errors.golden", []byte(out.String()))
}
