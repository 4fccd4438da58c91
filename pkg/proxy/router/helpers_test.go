package router

import (
	"slices"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

// parseRC decodes a RouteConfiguration written in YAML, as users write
// them.
func parseRC(t testing.TB, y string) *routev3.RouteConfiguration {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("yaml: %v", err)
	}
	rc := &routev3.RouteConfiguration{}
	if err := protojson.Unmarshal(j, rc); err != nil {
		t.Fatalf("protojson: %v", err)
	}
	return rc
}

// mustCompile compiles a YAML route configuration that must be valid.
func mustCompile(t testing.TB, y string) *Table {
	t.Helper()
	table, err := Compile(parseRC(t, y))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return table
}

// headers is a HeaderEditor over an ordered list, as a connection
// manager's header map behaves: Get joins repeated values with ",".
type headers struct{ kv [][2]string }

func newHeaders(pairs ...string) *headers {
	h := &headers{}
	for i := 0; i+1 < len(pairs); i += 2 {
		h.kv = append(h.kv, [2]string{pairs[i], pairs[i+1]})
	}
	return h
}

func (h *headers) Get(name string) (string, bool) {
	var vals []string
	for _, p := range h.kv {
		if p[0] == name {
			vals = append(vals, p[1])
		}
	}
	return strings.Join(vals, ","), vals != nil
}

func (h *headers) Set(name, value string) {
	h.Del(name)
	h.Add(name, value)
}

func (h *headers) Add(name, value string) { h.kv = append(h.kv, [2]string{name, value}) }

func (h *headers) Del(name string) {
	h.kv = slices.DeleteFunc(h.kv, func(p [2]string) bool { return p[0] == name })
}

// DelMatching removes the headers whose name match accepts.
func (h *headers) DelMatching(match func(string) bool) {
	h.kv = slices.DeleteFunc(h.kv, func(p [2]string) bool { return match(p[0]) })
}

// String renders the headers one per line, in order.
func (h *headers) String() string {
	var b strings.Builder
	for _, p := range h.kv {
		b.WriteString(p[0] + ": " + p[1] + "\n")
	}
	return b.String()
}

// staticHeaders is a read-only HeaderGetter that does not allocate, for
// benchmarks and allocation checks.
type staticHeaders map[string]string

func (h staticHeaders) Get(name string) (string, bool) {
	v, ok := h[name]
	return v, ok
}
