package reqwithoutquery

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/metadata/v3"
	rwqv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/req_without_query/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// headers is a HeaderGetter over a map.
type headers map[string]string

func (h headers) Get(name string) (string, bool) {
	v, ok := h[name]
	return v, ok
}

func registry(t *testing.T) *extension.Registry {
	t.Helper()
	r, err := extension.New(extension.Of(Name, accesslog.FormatterCategory, &rwqv3.ReqWithoutQuery{}, Factory{}))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// withFormatter is a text format that lists the extension.
func withFormatter(t *testing.T, format string) *corev3.SubstitutionFormatString {
	t.Helper()
	tc, err := anypb.New(&rwqv3.ReqWithoutQuery{})
	if err != nil {
		t.Fatal(err)
	}
	return &corev3.SubstitutionFormatString{
		Format:     &corev3.SubstitutionFormatString_TextFormatSource{TextFormatSource: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: format}}},
		Formatters: []*corev3.TypedExtensionConfig{{Name: "envoy.formatter.req_without_query", TypedConfig: tc}},
	}
}

func TestReqWithoutQuery(t *testing.T) {
	e := &accesslog.Entry{
		Path:           "/api/v1?token=secret&x=1",
		RequestHeaders: headers{"x-envoy-original-path": "/orig?q=1", "x-plain": "no-query", "x-empty": ""},
	}
	tests := map[string]struct {
		format string
		want   string
	}{
		"path":                 {format: "%REQ_WITHOUT_QUERY(:PATH)%", want: "/api/v1"},
		"alternative first":    {format: "%REQ_WITHOUT_QUERY(X-ENVOY-ORIGINAL-PATH?:PATH)%", want: "/orig"},
		"falls back":           {format: "%REQ_WITHOUT_QUERY(X-MISSING?:PATH)%", want: "/api/v1"},
		"no query":             {format: "%REQ_WITHOUT_QUERY(X-PLAIN)%", want: "no-query"},
		"truncated":            {format: "%REQ_WITHOUT_QUERY(:PATH):4%", want: "/api"},
		"missing":              {format: "%REQ_WITHOUT_QUERY(X-NONE)%", want: "-"},
		"empty is not missing": {format: "[%REQ_WITHOUT_QUERY(X-EMPTY)%]", want: "[]"},
		"built-ins still work": {format: "%REQ(:PATH)% %REQ_WITHOUT_QUERY(:PATH)%", want: "/api/v1?token=secret&x=1 /api/v1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f, err := accesslog.CompileSubstitution(withFormatter(t, tc.format), registry(t))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(f.Append(nil, e)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReqWithoutQueryTypedJSON(t *testing.T) {
	sf := withFormatter(t, "")
	st, err := structpb.NewStruct(map[string]any{"path": "%REQ_WITHOUT_QUERY(:PATH)%", "none": "%REQ_WITHOUT_QUERY(X-NONE)%"})
	if err != nil {
		t.Fatal(err)
	}
	sf.Format = &corev3.SubstitutionFormatString_JsonFormat{JsonFormat: st}
	f, err := accesslog.CompileSubstitution(sf, registry(t))
	if err != nil {
		t.Fatal(err)
	}
	got := string(f.Append(nil, &accesslog.Entry{Path: "/a?b"}))
	if want := `{"none":null,"path":"/a"}` + "\n"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestReqWithoutQueryErrors(t *testing.T) {
	tests := map[string]struct {
		sf   *corev3.SubstitutionFormatString
		want string
	}{
		"without the formatter": {
			sf:   &corev3.SubstitutionFormatString{Format: &corev3.SubstitutionFormatString_TextFormatSource{TextFormatSource: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "%REQ_WITHOUT_QUERY(:PATH)%"}}}},
			want: "text_format_source.inline_string: at offset 0: command operator %REQ_WITHOUT_QUERY% needs the formatter extension envoy.formatter.req_without_query",
		},
		"no header":        {sf: withFormatter(t, "%REQ_WITHOUT_QUERY%"), want: "at offset 0: %REQ_WITHOUT_QUERY%: empty header name"},
		"two alternatives": {sf: withFormatter(t, "%REQ_WITHOUT_QUERY(A?B?C)%"), want: "more than one alternative header"},
		"another formatter": {
			sf: func() *corev3.SubstitutionFormatString {
				sf := withFormatter(t, "x")
				tc, _ := anypb.New(&metadatav3.Metadata{})
				sf.Formatters = append(sf.Formatters, &corev3.TypedExtensionConfig{Name: "envoy.formatter.metadata", TypedConfig: tc})
				return sf
			}(),
			want: "formatters[1].typed_config: formatter type envoy.extensions.formatter.metadata.v3.Metadata is not supported by Outrigger",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := accesslog.CompileSubstitution(tc.sf, registry(t))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}
