package iptagging

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	iptv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ip_tagging/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

func parse(t *testing.T, js string) *iptv3.IPTagging {
	t.Helper()
	var c iptv3.IPTagging
	if err := protojson.Unmarshal([]byte(js), &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// runtimeValues is a runtime of fixed integer values.
type runtimeValues map[string]uint64

func (r runtimeValues) Uint64(key string, def uint64) uint64 {
	if v, ok := r[key]; ok {
		return v
	}
	return def
}

const tags = `"ip_tags": [
  {"ip_tag_name": "partner", "ip_list": [{"address_prefix": "203.0.113.0", "prefix_len": 24}, {"address_prefix": "2001:db8::", "prefix_len": 32}]},
  {"ip_tag_name": "edge", "ip_list": [{"address_prefix": "203.0.113.7", "prefix_len": 32}]}]`

func TestDecodeHeaders(t *testing.T) {
	for _, tc := range []struct {
		name, cfg, remote string
		headers           []string
		rt                runtimeValues
		header, want      string
		present           bool
		hits              map[string]uint64
	}{
		{"two tags", `{` + tags + `}`, "203.0.113.7", nil, nil, "x-envoy-ip-tags", "partner,edge", true,
			map[string]uint64{"partner.hit": 1, "edge.hit": 1, "total": 1, "no_hit": 0}},
		{"ipv6 and an earlier value", `{` + tags + `}`, "2001:db8::5", []string{"x-envoy-ip-tags", "earlier"}, nil, "x-envoy-ip-tags", "earlier,partner", true,
			map[string]uint64{"partner.hit": 1, "total": 1}},
		{"no hit", `{` + tags + `}`, "198.51.100.1", nil, nil, "x-envoy-ip-tags", "", false,
			map[string]uint64{"no_hit": 1, "total": 1}},
		{"internal only, external request", `{"request_type": "INTERNAL", ` + tags + `}`, "203.0.113.9", nil, nil, "x-envoy-ip-tags", "", false,
			map[string]uint64{"total": 0}},
		{"external only, internal request", `{"request_type": "EXTERNAL", ` + tags + `}`, "203.0.113.9", []string{"x-envoy-internal", "true"}, nil, "x-envoy-ip-tags", "", false,
			map[string]uint64{"total": 0}},
		{"runtime off", `{` + tags + `}`, "203.0.113.9", nil, runtimeValues{enabledKey: 0}, "x-envoy-ip-tags", "", false,
			map[string]uint64{"total": 0}},
		{"sanitize replaces", `{"ip_tag_header": {"header": "X-Tags"}, ` + tags + `}`, "203.0.113.9", []string{"x-tags", "forged"}, nil, "x-tags", "partner", true, nil},
		{"sanitize removes", `{"ip_tag_header": {"header": "X-Tags"}, ` + tags + `}`, "198.51.100.1", []string{"x-tags", "forged"}, nil, "x-tags", "", false, nil},
		{"append", `{"ip_tag_header": {"header": "x-tags", "action": "APPEND_IF_EXISTS_OR_ADD"}, ` + tags + `}`, "203.0.113.9", []string{"x-tags", "mine"}, nil, "x-tags", "mine,partner", true, nil},
		{"append keeps", `{"ip_tag_header": {"header": "x-tags", "action": "APPEND_IF_EXISTS_OR_ADD"}, ` + tags + `}`, "198.51.100.1", []string{"x-tags", "mine"}, nil, "x-tags", "mine", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := stats.NewStore()
			rt := tc.rt
			if rt == nil {
				rt = runtimeValues{}
			}
			c, err := Factory{}.Compile(parse(t, tc.cfg), httpfilter.Context{Stats: store, StatPrefix: "http.in.", Runtime: rt})
			if err != nil {
				t.Fatal(err)
			}
			s := httpfiltertest.NewStream("GET", "/", tc.headers...)
			s.Remote = tc.remote
			c.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
			got, ok := s.ReqHeaders.Get(tc.header)
			if got != tc.want || ok != tc.present {
				t.Errorf("%s = %q (%v), want %q (%v)", tc.header, got, ok, tc.want, tc.present)
			}
			for name, want := range tc.hits {
				if v := store.Counter("http.in.ip_tagging." + name).Value(); v != want {
					t.Errorf("%s = %d, want %d", name, v, want)
				}
			}
		})
	}
}

func TestDatasource(t *testing.T) {
	dir := t.TempDir()
	yml := filepath.Join(dir, "tags.yaml")
	if err := os.WriteFile(yml, []byte("ip_tags:\n- ip_tag_name: office\n  ip_list: [{address_prefix: 192.0.2.0, prefix_len: 24}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := stats.NewStore()
	c, err := Factory{}.Compile(parse(t, `{"ip_tags_datasource": {"filename": "`+yml+`"}}`), httpfilter.Context{Stats: store, StatPrefix: "http.in.", Runtime: runtimeValues{}})
	if err != nil {
		t.Fatal(err)
	}
	s := httpfiltertest.NewStream("GET", "/")
	s.Remote = "192.0.2.1"
	c.NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
	if v, _ := s.ReqHeaders.Get("x-envoy-ip-tags"); v != "office" {
		t.Errorf("x-envoy-ip-tags = %q", v)
	}

	bad := filepath.Join(dir, "tags.txt")
	badCIDR := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(badCIDR, []byte(`{"ip_tags": [{"ip_tag_name": "x", "ip_list": [{"address_prefix": "nope", "prefix_len": 8}]}]}`), 0o600)
	for cfg, want := range map[string]string{
		`{}`: "ip_tags: HTTP IP Tagging Filter requires either ip_tags or ip_tags_datasource",
		`{"ip_tags_datasource": {"filename": "` + bad + `"}, ` + tags + `}`:                                  "ip_tags_datasource: only one of",
		`{"ip_tags_datasource": {"filename": "` + bad + `"}}`:                                                "ip_tags_datasource.filename: unsupported file format",
		`{"ip_tags_datasource": {"inline_string": "x"}}`:                                                     "ip_tags_datasource.filename: cannot load tags from empty filename",
		`{"ip_tags_datasource": {"filename": "` + badCIDR + `"}}`:                                            "ip_tags_datasource.ip_tags[0].ip_list[0].address_prefix",
		`{"ip_tags": [{"ip_tag_name": "x", "ip_list": [{"address_prefix": "10.0.0.0", "prefix_len": 40}]}]}`: "ip_tags[0].ip_list[0].prefix_len",
	} {
		_, err := Factory{}.Compile(parse(t, cfg), httpfilter.Context{Stats: store, Runtime: runtimeValues{}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", cfg, err, want)
		}
	}
}
