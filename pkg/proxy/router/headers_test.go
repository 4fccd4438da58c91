package router

import (
	"strings"
	"testing"
	"time"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

// levelsYAML sets the same headers at the three levels so that the order
// of application shows.
const levelsYAML = `
request_headers_to_add:
- {header: {key: x-winner, value: global}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}
- {header: {key: x-trail, value: global}}
response_headers_to_add:
- {header: {key: x-winner, value: global}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}
response_headers_to_remove: [x-internal]
virtual_hosts:
- name: v
  domains: ["*"]
  request_headers_to_add:
  - {header: {key: x-winner, value: vhost}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}
  - {header: {key: x-trail, value: vhost}}
  response_headers_to_add:
  - {header: {key: x-winner, value: vhost}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}
  routes:
  - match: {prefix: /}
    route: {cluster: c}
    request_headers_to_add:
    - {header: {key: X-Winner, value: route}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}
    - {header: {key: x-trail, value: route}}
    request_headers_to_remove: [x-trail]
    response_headers_to_add:
    - {header: {key: x-winner, value: route}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}
`

func TestHeaderMutationOrder(t *testing.T) {
	tests := map[string]struct {
		yaml     string
		request  string
		response string
	}{
		"most general level wins by default": {
			yaml:     levelsYAML,
			request:  "x-trail: route\nx-trail: vhost\nx-winner: global\nx-trail: global\n",
			response: "x-winner: global\n",
		},
		"most specific level wins when asked": {
			yaml:     "most_specific_header_mutations_wins: true\n" + levelsYAML,
			request:  "x-winner: route\nx-trail: route\n",
			response: "x-winner: route\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := mustCompile(t, tc.yaml).Match("h", "/")
			req := newHeaders("x-trail", "client")
			r.MutateRequestHeaders(req, nil)
			if got := req.String(); got != tc.request {
				t.Errorf("request headers:\n%s\nwant:\n%s", got, tc.request)
			}
			resp := newHeaders("x-internal", "secret")
			r.MutateResponseHeaders(resp, nil)
			if got := resp.String(); got != tc.response {
				t.Errorf("response headers:\n%s\nwant:\n%s", got, tc.response)
			}
		})
	}
}

func TestAppendActions(t *testing.T) {
	r := mustCompile(t, `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {cluster: c}
    request_headers_to_add:
    - {header: {key: x-append, value: added}}
    - {header: {key: x-append-new, value: added}, append_action: APPEND_IF_EXISTS_OR_ADD}
    - {header: {key: x-absent, value: added}, append_action: ADD_IF_ABSENT}
    - {header: {key: x-absent-there, value: added}, append_action: ADD_IF_ABSENT}
    - {header: {key: x-overwrite, value: added}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}
    - {header: {key: x-overwrite-new, value: added}, append_action: OVERWRITE_IF_EXISTS_OR_ADD}
    - {header: {key: x-if-exists, value: added}, append_action: OVERWRITE_IF_EXISTS}
    - {header: {key: x-if-exists-new, value: added}, append_action: OVERWRITE_IF_EXISTS}
    - {header: {key: x-legacy-false, value: added}, append: false}
    - {header: {key: x-legacy-true, value: added}, append: true}
    - {header: {key: x-empty, value: ""}}
    - {header: {key: x-empty-kept, value: ""}, keep_empty_value: true}
    - {header: {key: x-snapshot, value: one}}
    - {header: {key: x-snapshot, value: two}, append_action: ADD_IF_ABSENT}
    - {header: {key: x-removed, value: back}}
    request_headers_to_remove: [x-removed]
`).Match("h", "/")
	h := newHeaders(
		"x-append", "orig", "x-absent-there", "orig", "x-overwrite", "orig1", "x-overwrite", "orig2",
		"x-if-exists", "orig", "x-legacy-false", "orig", "x-legacy-true", "orig", "x-removed", "orig",
	)
	r.MutateRequestHeaders(h, nil)
	// Removals come first, overwrites (which move a header to the end,
	// as Envoy's set does) are applied before appends, and
	// conditions are judged on the headers before this level's changes
	// (so x-snapshot, absent then, gets both values).
	want := strings.Join([]string{
		"x-append: orig", "x-absent-there: orig", "x-legacy-true: orig",
		"x-overwrite: added", "x-overwrite-new: added", "x-if-exists: added", "x-legacy-false: added",
		"x-append: added", "x-append-new: added", "x-absent: added", "x-legacy-true: added",
		"x-empty-kept: ", "x-snapshot: one", "x-snapshot: two", "x-removed: back", "",
	}, "\n")
	if got := h.String(); got != want {
		t.Errorf("headers:\n%s\nwant:\n%s", got, want)
	}
}

func TestHeaderValueOperators(t *testing.T) {
	r := mustCompile(t, `
virtual_hosts:
- name: v
  domains: ["*"]
  routes:
  - match: {prefix: /}
    route: {cluster: c}
    request_headers_to_add:
    - {header: {key: x-client, value: "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"}}
    - {header: {key: x-proto, value: "via %PROTOCOL% at %START_TIME(%s)%"}}
    - {header: {key: x-percent, value: "100%%"}}
    - {header: {key: x-missing, value: "%UPSTREAM_HOST%"}}
    - {header: {key: x-missing-kept, value: "%UPSTREAM_HOST%"}, keep_empty_value: true}
    response_headers_to_add:
    - {header: {key: x-upstream, value: "%UPSTREAM_HOST%"}}
    - {header: {key: x-code, value: "%RESPONSE_CODE%"}}
`).Match("h", "/")
	e := &accesslog.Entry{
		StartTime:               time.Unix(1700000000, 0),
		Protocol:                "HTTP/1.1",
		DownstreamRemoteAddress: "10.0.0.1:5555",
	}
	req := newHeaders()
	r.MutateRequestHeaders(req, e)
	wantReq := "x-client: 10.0.0.1\nx-proto: via HTTP/1.1 at 1700000000\nx-percent: 100%\nx-missing-kept: \n"
	if got := req.String(); got != wantReq {
		t.Errorf("request headers:\n%s\nwant:\n%s", got, wantReq)
	}
	e.UpstreamHost, e.ResponseCode = "10.0.0.2:80", 201
	resp := newHeaders()
	r.MutateResponseHeaders(resp, e)
	if got, want := resp.String(), "x-upstream: 10.0.0.2:80\nx-code: 201\n"; got != want {
		t.Errorf("response headers:\n%s\nwant:\n%s", got, want)
	}
}

func TestLiteralHeaderMutationsAllocateNothing(t *testing.T) {
	r := mustCompile(t, levelsYAML).Match("h", "/")
	h := &countingEditor{}
	allocs := testing.AllocsPerRun(100, func() {
		r.MutateRequestHeaders(h, nil)
		r.MutateResponseHeaders(h, nil)
	})
	if allocs != 0 {
		t.Errorf("literal header mutations allocate %.1f times, want 0", allocs)
	}
	if h.calls == 0 {
		t.Error("no header was changed")
	}
}

// countingEditor counts changes without storing them.
type countingEditor struct{ calls int }

func (c *countingEditor) Get(string) (string, bool) { return "", false }
func (c *countingEditor) Set(string, string)        { c.calls++ }
func (c *countingEditor) Add(string, string)        { c.calls++ }
func (c *countingEditor) Del(string)                { c.calls++ }
