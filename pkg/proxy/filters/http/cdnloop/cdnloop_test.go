package cdnloop

import (
	"strings"
	"testing"

	cdnloopv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cdn_loop/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter/httpfiltertest"
)

func TestCountOccurrences(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   int // -1: a parse error
	}{
		{"", 0},
		{"cdn", 1},
		{"foo, cdn, bar, cdn", 2},
		{"cdn,cdn,,cdn", 3},
		{" , cdn ,  ", 1},
		{"cdn:8080", 0},
		{"cdn; abc=def; v=\"quoted \\\" string\"", 1},
		{"cdn;v=1, other; w=\"x\"", 1},
		{"[2001:db8::1]:443, cdn", 1},
		{"CDN", 0},
		{"cdn cdn", -1},
		{"cdn;", -1},
		{"cdn; v", -1},
		{"cdn; v=", -1},
		{"cdn; v=\"open", -1},
		{"[2001:db8::1", -1},
		{"[zz]", -1},
		{"@", -1},
		{"cdn; v=\"bad\x01\"", -1},
	} {
		got, err := countOccurrences(tc.header, "cdn")
		if tc.want < 0 {
			if err == nil {
				t.Errorf("%q: no error, count %d", tc.header, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: count %d, %v; want %d", tc.header, got, err, tc.want)
		}
	}
}

func compile(t *testing.T, id string, max uint32) httpfilter.Config {
	t.Helper()
	cfg, err := Factory{}.Compile(&cdnloopv3.CdnLoopConfig{CdnId: id, MaxAllowedOccurrences: max}, httpfilter.Context{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestCdnLoop(t *testing.T) {
	for _, tc := range []struct {
		name    string
		max     uint32
		headers []string
		status  int // 0: on its way
		header  string
	}{
		{"no header", 0, nil, 0, "cdn"},
		{"others", 0, []string{"cdn-loop", "a, b"}, 0, "a, b,cdn"},
		{"own id once, none allowed", 0, []string{"cdn-loop", "a, cdn"}, 502, ""},
		{"own id once, one allowed", 1, []string{"cdn-loop", "cdn"}, 0, "cdn,cdn"},
		{"own id twice, one allowed", 1, []string{"cdn-loop", "cdn, cdn"}, 502, ""},
		{"two header lines", 1, []string{"cdn-loop", "cdn", "cdn-loop", "cdn"}, 502, ""},
		{"invalid", 3, []string{"cdn-loop", "a b"}, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := httpfiltertest.NewStream("GET", "/", tc.headers...)
			got := compile(t, "cdn", tc.max).NewFilter().(httpfilter.Decoder).DecodeHeaders(s)
			if tc.status == 0 {
				v, _ := s.ReqHeaders.Get("cdn-loop")
				if got != httpfilter.Continue || s.Reply != nil || v != tc.header {
					t.Fatalf("status %v, reply %+v, cdn-loop %q", got, s.Reply, v)
				}
				return
			}
			if got != httpfilter.Stop || s.Reply == nil || s.Reply.Status != tc.status {
				t.Fatalf("status %v, reply %+v", got, s.Reply)
			}
			want := map[int][2]string{
				400: {"Invalid CDN-Loop header in request.", "invalid_cdn_loop_header"},
				502: {"The server has detected a loop between CDNs.", "cdn_loop_detected"},
			}[tc.status]
			if s.Reply.Body != want[0] || s.Reply.Details != want[1] {
				t.Errorf("reply %+v", s.Reply)
			}
		})
	}
}

func TestCdnLoopConfigErrors(t *testing.T) {
	for _, id := range []string{"", "@cdn", "[::1"} {
		_, err := Factory{}.Compile(&cdnloopv3.CdnLoopConfig{CdnId: id}, httpfilter.Context{})
		if err == nil || !strings.HasPrefix(err.Error(), "cdn_id: ") {
			t.Errorf("%q: error %v", id, err)
		}
	}
}
