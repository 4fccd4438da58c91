package headermutation

import (
	"strings"
	"testing"

	mutationv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/early_header_mutation/header_mutation/v3"
	"google.golang.org/protobuf/types/known/emptypb"
)

func TestCompile(t *testing.T) {
	if _, err := (Factory{}).Compile(&emptypb.Empty{}); err == nil {
		t.Error("another config type compiled")
	}
	for _, tc := range []struct {
		name string
		m    *mutationv3.HeaderMutation
		want string
	}{
		{"remove host", &mutationv3.HeaderMutation{Action: &mutationv3.HeaderMutation_Remove{Remove: "Host"}}, "mutations[0].remove: "},
		{"append a pseudo-header", &mutationv3.HeaderMutation{Action: &mutationv3.HeaderMutation_Append{Append: &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: ":authority", Value: "x"}}}}, "mutations[0].append"},
		{"no action", &mutationv3.HeaderMutation{}, "mutations[0].action: "},
	} {
		_, err := (Factory{}).Compile(&hmv3.HeaderMutation{Mutations: []*mutationv3.HeaderMutation{tc.m}})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error starting %q", tc.name, err, tc.want)
		}
	}
	if _, err := (Factory{}).Compile(&hmv3.HeaderMutation{Mutations: []*mutationv3.HeaderMutation{{Action: &mutationv3.HeaderMutation_Remove{Remove: "x-a"}}}}); err != nil {
		t.Error(err)
	}
}
