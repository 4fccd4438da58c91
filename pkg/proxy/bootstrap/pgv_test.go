package bootstrap

import (
	"errors"
	"fmt"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/reflect/protoreflect"
)

func TestGoCamelCase(t *testing.T) {
	tests := map[string]string{
		"port_value":         "PortValue",
		"ipv4_compat":        "Ipv4Compat",
		"static_resources":   "StaticResources",
		"x":                  "X",
		"_leading":           "XLeading",
		"http2_options":      "Http2Options",
		"a_1b":               "A_1B",
		"already_Upper":      "Already_Upper",
		"use_remote_address": "UseRemoteAddress",
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			if got := goCamelCase(in); got != want {
				t.Errorf("goCamelCase(%q) = %q, want %q", in, got, want)
			}
		})
	}
}

func TestPGVField(t *testing.T) {
	tests := map[string]struct {
		md      protoreflect.MessageDescriptor
		goField string
		want    string
		wantSub protoreflect.FullName // "" for none
	}{
		"message field": {
			md: (&bootstrapv3.Bootstrap{}).ProtoReflect().Descriptor(), goField: "StaticResources",
			want: "static_resources", wantSub: "envoy.config.bootstrap.v3.Bootstrap.StaticResources",
		},
		"list element": {
			md: (&bootstrapv3.Bootstrap_StaticResources{}).ProtoReflect().Descriptor(), goField: "Listeners[2]",
			want: "listeners[2]", wantSub: "envoy.config.listener.v3.Listener",
		},
		"map entry": {
			md: (&corev3.Metadata{}).ProtoReflect().Descriptor(), goField: "FilterMetadata[envoy.lb]",
			want: `filter_metadata["envoy.lb"]`, wantSub: "google.protobuf.Struct",
		},
		"scalar": {
			md: (&corev3.SocketAddress{}).ProtoReflect().Descriptor(), goField: "PortValue",
			want: "port_value",
		},
		"oneof": {
			md: (&hcmv3.HttpConnectionManager{}).ProtoReflect().Descriptor(), goField: "RouteSpecifier",
			want: "route_specifier",
		},
		"unknown name is kept": {
			md: (&corev3.SocketAddress{}).ProtoReflect().Descriptor(), goField: "Mystery[1]",
			want: "Mystery[1]",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, sub := pgvField(tc.md, tc.goField)
			var subName protoreflect.FullName
			if sub != nil {
				subName = sub.FullName()
			}
			if got != tc.want || subName != tc.wantSub {
				t.Errorf("pgvField(%q) = %q, %q; want %q, %q", tc.goField, got, subName, tc.want, tc.wantSub)
			}
		})
	}
}

// fakePGV has the shape of a generated validation error, to build error
// trees the generated code would only produce for unusual inputs.
type fakePGV struct {
	field, reason string
	cause         error
}

func (e fakePGV) Field() string     { return e.field }
func (e fakePGV) Reason() string    { return e.reason }
func (e fakePGV) Cause() error      { return e.cause }
func (e fakePGV) Key() bool         { return false }
func (e fakePGV) ErrorName() string { return "FakeValidationError" }
func (e fakePGV) Error() string     { return fmt.Sprintf("invalid %s: %s", e.field, e.reason) }

// fakeMulti has the shape of a generated XxxMultiError.
type fakeMulti []error

func (m fakeMulti) Error() string      { return "several errors" }
func (m fakeMulti) AllErrors() []error { return m }

func TestPGVFieldErrors(t *testing.T) {
	md := (&bootstrapv3.Bootstrap{}).ProtoReflect().Descriptor()
	tests := map[string]struct {
		err  error
		want []string
	}{
		"nested causes": {
			err: fakeMulti{
				fakePGV{"Admin", "embedded message failed validation", fakeMulti{
					fakePGV{"Address", "embedded message failed validation", fakePGV{
						"SocketAddress", "embedded message failed validation", fakeMulti{
							fakePGV{field: "PortValue", reason: "too big"},
							fakePGV{field: "Address", reason: "too short"},
						},
					}},
				}},
				fakePGV{field: "StatsFlushInterval", reason: "too long"},
			},
			want: []string{
				"admin.address.socket_address.port_value: too big",
				"admin.address.socket_address.address: too short",
				"stats_flush_interval: too long",
			},
		},
		"plain cause": {
			err:  fakePGV{"Node", "embedded message failed validation", errors.New("boom")},
			want: []string{"node: embedded message failed validation: boom"},
		},
		"not a validation error": {
			err:  errors.New("something else"),
			want: []string{"something else"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, e := range pgvFieldErrors(tc.err, md, "") {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidMapKey(t *testing.T) {
	tests := map[string]struct {
		kind protoreflect.Kind
		key  string
		want bool
	}{
		"string":          {kind: protoreflect.StringKind, key: "anything at all", want: true},
		"bool":            {kind: protoreflect.BoolKind, key: "true", want: true},
		"bool word":       {kind: protoreflect.BoolKind, key: "yes"},
		"int32":           {kind: protoreflect.Int32Kind, key: "-12", want: true},
		"int32 too big":   {kind: protoreflect.Int32Kind, key: "3000000000"},
		"uint64":          {kind: protoreflect.Uint64Kind, key: "18446744073709551615", want: true},
		"uint32 negative": {kind: protoreflect.Uint32Kind, key: "-1"},
		"int64 text":      {kind: protoreflect.Int64Kind, key: "ten"},
		"float key":       {kind: protoreflect.FloatKind, key: "1.5"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := validMapKey(tc.kind, tc.key); got != tc.want {
				t.Errorf("validMapKey(%v, %q) = %v, want %v", tc.kind, tc.key, got, tc.want)
			}
		})
	}
}
