package uuid

import (
	"testing"

	uuidv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/request_id/uuid/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/requestid"
)

func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  *uuidv3.UuidRequestIdConfig
		want requestid.Behaviour
	}{
		{"defaults", &uuidv3.UuidRequestIdConfig{}, requestid.Behaviour{PackTraceReason: true, SampleByID: true}},
		{"no packing", &uuidv3.UuidRequestIdConfig{PackTraceReason: wrapperspb.Bool(false)}, requestid.Behaviour{SampleByID: true}},
		{"no sampling by id", &uuidv3.UuidRequestIdConfig{UseRequestIdForTraceSampling: wrapperspb.Bool(false)}, requestid.Behaviour{PackTraceReason: true}},
	} {
		got, err := Factory{}.Compile(tc.cfg)
		if err != nil || got != tc.want {
			t.Errorf("%s: Compile = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	if _, err := (Factory{}).Compile(&wrapperspb.BoolValue{}); err == nil {
		t.Error("Compile accepted another message")
	}
}
