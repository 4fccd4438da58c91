package tunnelhttp

import (
	"net/http"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
)

func option(key, value string, action corev3.HeaderValueOption_HeaderAppendAction) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: key, Value: value}, AppendAction: action}
}

// legacyAppend is an option with the deprecated append boolean, which
// Envoy still reads.
func legacyAppend(key string, appendValue bool, action corev3.HeaderValueOption_HeaderAppendAction) *corev3.HeaderValueOption {
	o := option(key, "v", action)
	//lint:ignore SA1019 Envoy still accepts the deprecated boolean.
	o.Append = wrapperspb.Bool(appendValue)
	return o
}

func TestApplyActions(t *testing.T) {
	var hs []Header
	for _, o := range []*corev3.HeaderValueOption{
		option("X-Add", "1", corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD),
		option("x-add", "2", corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD),
		option("x-absent", "first", corev3.HeaderValueOption_ADD_IF_ABSENT),
		option("x-absent", "second", corev3.HeaderValueOption_ADD_IF_ABSENT),
		option("x-set", "old", corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD),
		option("x-set", "new", corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD),
		option("x-only-if", "never", corev3.HeaderValueOption_OVERWRITE_IF_EXISTS),
		option("x-empty", "", corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD),
		{Header: &corev3.HeaderValue{Key: "x-kept", Value: ""}, KeepEmptyValue: true},
		legacyAppend("x-legacy", false, 0),
	} {
		h, err := CompileHeader(o, nil)
		if err != nil {
			t.Fatalf("%v: %v", o, err)
		}
		hs = append(hs, h)
	}
	hdr := http.Header{"X-Legacy": {"before"}}
	Apply(hs, hdr, &accesslog.Entry{})
	want := http.Header{
		"X-Add": {"1", "2"}, "X-Absent": {"first"}, "X-Set": {"new"}, "X-Kept": {""}, "X-Legacy": {"v"},
	}
	if len(hdr) != len(want) {
		t.Fatalf("headers %v, want %v", hdr, want)
	}
	for k, v := range want {
		if strings.Join(hdr[k], ",") != strings.Join(v, ",") || len(hdr[k]) != len(v) {
			t.Errorf("%s: %q, want %q", k, hdr[k], v)
		}
	}
}

func TestCompileHeaderRefusals(t *testing.T) {
	for _, tc := range []struct {
		o    *corev3.HeaderValueOption
		want string
	}{
		{option("", "v", 0), "header.key: a header name is required"},
		{option(":authority", "v", 0), `header.key: ":authority" cannot be set`},
		{option("Host", "v", 0), `header.key: "host" cannot be set`},
		{legacyAppend("x", true, corev3.HeaderValueOption_ADD_IF_ABSENT), "append: cannot be set together with append_action"},
		{option("x", "%NO_SUCH_OPERATOR%", 0), "header.value: "},
	} {
		_, err := CompileHeader(tc.o, nil)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one starting %q", tc.o, err, tc.want)
		}
	}
}

func TestHeaderMapOf(t *testing.T) {
	m := HeaderMapOf(200, http.Header{"X-B": {"2"}, "X-A": {"1", "3"}})
	var got []string
	for _, h := range m.GetHeaders() {
		got = append(got, h.GetKey()+"="+h.GetValue())
	}
	if want := ":status=200 x-a=1 x-a=3 x-b=2"; strings.Join(got, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(got, " "), want)
	}
	if _, plain := (HeaderMap{M: m}).FilterStateString(); plain {
		t.Error("a tunnel header map has no plain form")
	}
	if len(HeaderMapOf(0, nil).GetHeaders()) != 0 {
		t.Error("no status and no fields must give an empty map")
	}
}
