package admin

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// FuzzConfigDumpQuery sends arbitrary resource, mask and name_regex values
// to /config_dump: the answer is a ConfigDump without any secret, or a 400
// or 404 with a reason; never a panic, a 500 or a leak.
func FuzzConfigDumpQuery(f *testing.F) {
	for _, seed := range []struct {
		resource, mask, nameRegex string
		eds                       bool
	}{
		{"", "", "", false},
		{"", "static_clusters", "", true},
		{"", "bootstrap.node.id,version_info", "", false},
		{"static_clusters", "cluster.name", "c.*", false},
		{"dynamic_listeners", "active_state.listener.name", "", false},
		{"static_secrets", "secret", ".*", false},
		{"static_endpoint_configs", "endpoint_config.cluster_name", "", true},
		{"version_info", "", "", false},
		{"", "a..b", "[", false},
		{"", ",", "(a|b", false},
		{"static_clusters", "cluster.transport_socket.typed_config.common_tls_context", "", false},
	} {
		f.Add(seed.resource, seed.mask, seed.nameRegex, seed.eds)
	}
	f.Fuzz(func(t *testing.T, resource, mask, nameRegex string, eds bool) {
		a, _ := newDumpAdmin(t)
		q := url.Values{}
		q.Set("resource", resource)
		q.Set("mask", mask)
		q.Set("name_regex", nameRegex)
		if eds {
			q.Set("include_eds", "")
		}
		rec := serve(t, a.Handler(), request{target: "/config_dump?" + q.Encode()})
		body := rec.Body.String()
		// Error messages quote the parameters, which may spell the secret.
		echoed := strings.Contains(resource+mask+nameRegex, secretText)
		if !echoed && strings.Contains(body, secretText) {
			t.Fatalf("a secret leaked for %q:\n%s", q.Encode(), body)
		}
		switch rec.Code {
		case http.StatusOK:
			var d adminv3.ConfigDump
			if err := protojson.Unmarshal(rec.Body.Bytes(), &d); err != nil {
				t.Errorf("the dump is not a ConfigDump: %v\n%s", err, body)
			}
		case http.StatusBadRequest, http.StatusNotFound:
			if body == "" {
				t.Errorf("%d without a reason", rec.Code)
			}
		default:
			t.Errorf("status %d for %q: %s", rec.Code, q.Encode(), body)
		}
	})
}
