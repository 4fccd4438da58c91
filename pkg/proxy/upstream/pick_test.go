package upstream

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestPickContextRejects(t *testing.T) {
	lb := func(fields map[string]any) *corev3.Metadata {
		s, err := structpb.NewStruct(fields)
		if err != nil {
			t.Fatal(err)
		}
		return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.lb": s}}
	}
	tried := &Host{Address: "a"}
	canary := &Host{Address: "b", Canary: true}
	v1 := &Host{Address: "c", Metadata: lb(map[string]any{"version": "v1", "zone": "z"})}
	listed := &Host{Address: "d", Metadata: lb(map[string]any{"version": []any{"v0", "v1"}})}
	plain := &Host{Address: "e", Metadata: lb(map[string]any{"version": "v2"})}
	omit, err := structpb.NewStruct(map[string]any{"version": "v1"})
	if err != nil {
		t.Fatal(err)
	}
	pc := &PickContext{PreviousHosts: []*Host{tried}, OmitCanary: true, OmitMetadata: omit}
	for h, want := range map[*Host]bool{tried: true, canary: true, v1: true, listed: true, plain: false, {Address: "f"}: false} {
		if got := pc.Rejects(h); got != want {
			t.Errorf("Rejects(%s) = %v; want %v", h.Address, got, want)
		}
	}
	if (&PickContext{}).Rejects(canary) {
		t.Error("a context without predicates rejects a host")
	}
}
