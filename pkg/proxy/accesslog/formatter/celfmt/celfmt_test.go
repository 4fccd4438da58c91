package celfmt

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	celv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/cel/v3"
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
	r, err := extension.New(extension.Of(Name, accesslog.FormatterCategory, &celv3.Cel{}, Factory{}))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// text is a text format that does not list the extension: Envoy has it
// built in.
func text(format string) *corev3.SubstitutionFormatString {
	return &corev3.SubstitutionFormatString{Format: &corev3.SubstitutionFormatString_TextFormatSource{TextFormatSource: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: format}}}}
}

func entry() *accesslog.Entry {
	return &accesslog.Entry{
		Method: "GET", Path: "/api/v1?x=1", ResponseCode: 503,
		RequestHeaders: headers{"x-tenant": "gold"},
	}
}

func TestCEL(t *testing.T) {
	for name, tc := range map[string]struct{ format, want string }{
		"header":           {"%CEL(request.headers['x-tenant'])%", "gold"},
		"number":           {"%CEL(response.code)%", "503"},
		"boolean":          {"%CEL(response.code >= 500)%", "true"},
		"truncated":        {"%CEL(request.url_path):4%", "/api"},
		"error is missing": {"%CEL(request.headers['x-none'])%", "-"},
		"typed in text":    {"%TYPED_CEL(response.code)%", "503"},
		"beside built-ins": {"%REQ(:METHOD)% %CEL(request.method == 'GET')%", "GET true"},
		// Envoy's defaults leave string concatenation out.
		"concatenation fails": {"%CEL(request.method + '!')%", "-"},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := accesslog.CompileSubstitution(text(tc.format), registry(t))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(f.Append(nil, entry())); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTypedCELJSON(t *testing.T) {
	st, err := structpb.NewStruct(map[string]any{
		"code": "%TYPED_CEL(response.code)%", "code_text": "%CEL(response.code)%", "err": "%TYPED_CEL(response.code >= 500)%",
		"tenant": "%TYPED_CEL(request.headers['x-tenant']):2%", "none": "%TYPED_CEL(request.headers['x-none'])%",
		"list": "%TYPED_CEL([1, 'a'])%", "bytes": "%TYPED_CEL(b'hi')%",
	})
	if err != nil {
		t.Fatal(err)
	}
	sf := &corev3.SubstitutionFormatString{Format: &corev3.SubstitutionFormatString_JsonFormat{JsonFormat: st}}
	f, err := accesslog.CompileSubstitution(sf, registry(t))
	if err != nil {
		t.Fatal(err)
	}
	got := string(f.Append(nil, entry()))
	want := `{"bytes":"aGk=","code":503,"code_text":"503","err":true,"list":[1,"a"],"none":null,"tenant":"go"}` + "\n"
	if strings.ReplaceAll(got, " ", "") != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestCELErrors(t *testing.T) {
	for name, tc := range map[string]struct{ format, want string }{
		"no expression":  {"%CEL%", "%CEL(...)% needs an expression"},
		"does not parse": {"%CEL(request.headers[)%", "Not able to parse filter expression"},
		// As in Envoy's command syntax, the expression ends at ')'.
		"a call": {"%CEL(size(request.path))%", "missing the closing '%'"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := accesslog.CompileSubstitution(text(tc.format), registry(t))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	// Without the registry, nothing builds the operator in.
	if _, err := accesslog.CompileSubstitution(text("%CEL(true)%"), nil); err == nil {
		t.Error("%CEL% without the extension compiled")
	}
}
