package metadata

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/metadata/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// TestListedFormatterKeepsTheBuiltIn checks that a format listing the
// extension renders %METADATA% exactly as one that does not.
func TestListedFormatterKeepsTheBuiltIn(t *testing.T) {
	reg, err := extension.New(extension.Of(Name, accesslog.FormatterCategory, &metadatav3.Metadata{}, Factory{}))
	if err != nil {
		t.Fatal(err)
	}
	tc, err := anypb.New(&metadatav3.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	format := "%METADATA(CLUSTER:ns:k)%|%METADATA(UPSTREAM_HOST:ns:k):2%"
	src := &corev3.SubstitutionFormatString_TextFormatSource{TextFormatSource: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: format}}}
	listed, err := accesslog.CompileSubstitution(&corev3.SubstitutionFormatString{
		Format: src, Formatters: []*corev3.TypedExtensionConfig{{Name: "envoy.formatter.metadata", TypedConfig: tc}},
	}, reg)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := accesslog.CompileSubstitution(&corev3.SubstitutionFormatString{Format: src}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := structpb.NewStruct(map[string]any{"k": "value"})
	if err != nil {
		t.Fatal(err)
	}
	md := &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"ns": st}}
	e := &accesslog.Entry{ClusterMetadata: md, UpstreamHostMetadata: md}
	for name, f := range map[string]*accesslog.Formatter{"listed": listed, "built in": plain} {
		if got, want := string(f.Append(nil, e)), "value|va"; got != want {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
}

func TestCompileRefusesOtherTypes(t *testing.T) {
	if _, err := (Factory{}).Compile(&emptypb.Empty{}); err == nil {
		t.Error("a configuration of another type was accepted")
	}
}
