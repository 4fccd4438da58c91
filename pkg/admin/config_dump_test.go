package admin

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/protobuf/proto"
)

// dumpCalls are the source calls of one /config_dump request.
var (
	dumpCalls    = []string{"ConfigDump.ConfigDump includeEDS=false"}
	dumpEDSCalls = []string{"ConfigDump.ConfigDump includeEDS=true"}
)

func TestConfigDump(t *testing.T) {
	for name, tc := range map[string]struct {
		target string
		calls  []string
	}{
		"all":               {"/config_dump", dumpCalls},
		"include-eds":       {"/config_dump?include_eds", dumpEDSCalls},
		"include-eds-false": {"/config_dump?include_eds=false", dumpEDSCalls},
		"empty-values":      {"/config_dump?resource=&mask=&name_regex=", dumpCalls},
		"form-body-ignored": {"/config_dump?mask=static_clusters", dumpCalls},

		"mask-one-dump":        {"/config_dump?mask=static_clusters", dumpCalls},
		"mask-fits-two-dumps":  {"/config_dump?mask=version_info", dumpCalls},
		"mask-spans-two-dumps": {"/config_dump?mask=bootstrap.node,static_listeners", dumpCalls},
		"mask-nested-field":    {"/config_dump?mask=bootstrap.node.id", dumpCalls},
		"mask-empty-paths":     {"/config_dump?mask=,,version_info,", dumpCalls},
		"mask-only-commas":     {"/config_dump?mask=,", dumpCalls},
		"mask-fits-none":       {"/config_dump?mask=no_such_field", dumpCalls},
		"mask-through-a-list":  {"/config_dump?mask=static_clusters.cluster", dumpCalls},
		"mask-through-scalar":  {"/config_dump?mask=version_info.x", dumpCalls},
		"mask-partly-fits-one": {"/config_dump?mask=static_clusters,dynamic_listeners", dumpCalls},

		"resource-static-clusters":        {"/config_dump?resource=static_clusters", dumpCalls},
		"resource-dynamic-active":         {"/config_dump?resource=dynamic_active_clusters", dumpCalls},
		"resource-static-listeners":       {"/config_dump?resource=static_listeners", dumpCalls},
		"resource-dynamic-listeners":      {"/config_dump?resource=dynamic_listeners", dumpCalls},
		"resource-empty-list":             {"/config_dump?resource=dynamic_warming_clusters", dumpCalls},
		"resource-mask-inside-any":        {"/config_dump?resource=dynamic_active_clusters&mask=cluster.name", dumpCalls},
		"resource-mask-inside-any-deeper": {"/config_dump?resource=static_clusters&mask=cluster.transport_socket.name,last_updated", dumpCalls},
		"resource-mask-whole-any":         {"/config_dump?resource=static_clusters&mask=cluster", dumpCalls},
		"resource-mask-outer-field":       {"/config_dump?resource=dynamic_active_clusters&mask=version_info", dumpCalls},
		"resource-mask-nested-any":        {"/config_dump?resource=dynamic_listeners&mask=name,active_state.listener.name", dumpCalls},
		"resource-mask-bad":               {"/config_dump?resource=static_clusters&mask=cluster.no_such_field", dumpCalls},
		"resource-mask-bad-escaped":       {"/config_dump?resource=static_clusters&mask=a%22b%0A,c", dumpCalls},
		"resource-mask-bad-empty-list":    {"/config_dump?resource=dynamic_warming_clusters&mask=nope", dumpCalls},
		"resource-not-repeated":           {"/config_dump?resource=version_info", dumpCalls},
		"resource-not-found":              {"/config_dump?resource=no_such_field", dumpCalls},
		"resource-endpoints":              {"/config_dump?resource=static_endpoint_configs&include_eds", dumpEDSCalls},
		"resource-endpoints-without-eds":  {"/config_dump?resource=static_endpoint_configs", dumpCalls},
		"resource-secrets-redacted":       {"/config_dump?resource=static_secrets", dumpCalls},

		"name-regex":                   {"/config_dump?name_regex=c1", dumpCalls},
		"name-regex-whole-name":        {"/config_dump?name_regex=c1&resource=dynamic_active_clusters", dumpCalls},
		"name-regex-partial-by-dots":   {"/config_dump?name_regex=.*c1.*&resource=dynamic_active_clusters", dumpCalls},
		"name-regex-record-name":       {"/config_dump?name_regex=egr.ss&resource=dynamic_listeners", dumpCalls},
		"name-regex-resource-and-mask": {"/config_dump?resource=static_secrets&name_regex=token&mask=name", dumpCalls},
		"name-regex-every-dump":        {"/config_dump?name_regex=local_route%7Cinline-cert", dumpCalls},
		"name-regex-with-eds":          {"/config_dump?name_regex=c1&include_eds&mask=static_endpoint_configs", dumpEDSCalls},
		"name-regex-invalid":           {"/config_dump?name_regex=%5Ba", nil},
		"name-regex-invalid-group":     {"/config_dump?name_regex=a)", nil},
	} {
		t.Run(name, func(t *testing.T) {
			a, src := newDumpAdmin(t)
			req := request{target: tc.target}
			if name == "form-body-ignored" {
				req = request{method: "POST", target: tc.target, body: "mask=static_listeners", header: formHeader()}
			}
			rec := serve(t, a.Handler(), req)
			checkResponseGolden(t, "config_dump-"+name, rec)
			if got := src.rec.take(); !slices.Equal(got, tc.calls) {
				t.Errorf("calls on the source = %q, want %q", got, tc.calls)
			}
			if strings.Contains(rec.Body.String(), secretText) {
				t.Errorf("a secret leaked:\n%s", rec.Body.String())
			}
		})
	}
}

// TestConfigDumpLeavesSourceIntact checks that masking and redaction work
// on copies: a source may hand out the messages it serves from.
func TestConfigDumpLeavesSourceIntact(t *testing.T) {
	a, src := newDumpAdmin(t)
	shared := src.dumps(true)
	before := make([]proto.Message, len(shared))
	for i, m := range shared {
		before[i] = proto.Clone(m)
	}
	src.dumps = func(bool) []proto.Message { return shared }
	for _, target := range []string{
		"/config_dump", "/config_dump?mask=static_clusters", "/config_dump?name_regex=c1",
		"/config_dump?resource=static_secrets&mask=name", "/config_dump?resource=static_clusters&mask=cluster.name",
	} {
		if rec := serve(t, a.Handler(), request{target: target}); rec.Code != http.StatusOK {
			t.Fatalf("%s: status %d", target, rec.Code)
		}
	}
	for i := range shared {
		if !proto.Equal(shared[i], before[i]) {
			t.Errorf("dump %d was modified by the admin", i)
		}
	}
}

func TestInitDump(t *testing.T) {
	for name, tc := range map[string]struct {
		target string
		init   *adminv3.UnreadyTargetsDumps
		calls  []string
	}{
		"all":            {target: "/init_dump", calls: []string{"ConfigDump.InitDump"}},
		"mask-listener":  {target: "/init_dump?mask=listener", calls: []string{"ConfigDump.InitDump"}},
		"mask-other":     {target: "/init_dump?mask=cluster"},
		"mask-empty":     {target: "/init_dump?mask=", calls: []string{"ConfigDump.InitDump"}},
		"nothing-unread": {target: "/init_dump", init: &adminv3.UnreadyTargetsDumps{}, calls: []string{"ConfigDump.InitDump"}},
		"nil":            {target: "/init_dump", init: nil, calls: []string{"ConfigDump.InitDump"}},
	} {
		t.Run(name, func(t *testing.T) {
			a, src := newDumpAdmin(t)
			if name == "nothing-unread" || name == "nil" {
				src.init = tc.init
			}
			rec := serve(t, a.Handler(), request{target: tc.target})
			checkResponseGolden(t, "config_dump-init-"+name, rec)
			if got := src.rec.take(); !slices.Equal(got, tc.calls) {
				t.Errorf("calls on the source = %q, want %q", got, tc.calls)
			}
		})
	}
}

func TestConfigDumpRoutesNeedASource(t *testing.T) {
	a := New(Options{Log: (&logSink{}).logger()})
	for _, p := range []string{"/config_dump", "/init_dump"} {
		if rec := serve(t, a.Handler(), request{target: p}); rec.Code != http.StatusNotFound {
			t.Errorf("%s without a source: status %d, want 404", p, rec.Code)
		}
	}
}
