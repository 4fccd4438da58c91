// Package uuid is the request id extension envoy.request_id.uuid, Envoy's
// default: x-request-id is a random UUID, which may carry the trace
// decision (pack_trace_reason) and drive the sampling decision
// (use_request_id_for_trace_sampling).
package uuid

import (
	"fmt"

	uuidv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/request_id/uuid/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/requestid"
)

// Name is the extension's name in Outrigger's spelling.
const Name = "proxy.request_id.uuid"

// Factory compiles UuidRequestIdConfig.
type Factory struct{}

// Compile implements requestid.Factory. Both options default to true, as
// in Envoy.
func (Factory) Compile(config proto.Message) (requestid.Behaviour, error) {
	c, ok := config.(*uuidv3.UuidRequestIdConfig)
	if !ok {
		return requestid.Behaviour{}, fmt.Errorf("expected %s, got %T", Name, config)
	}
	b := requestid.Default()
	if v := c.GetPackTraceReason(); v != nil {
		b.PackTraceReason = v.GetValue()
	}
	if v := c.GetUseRequestIdForTraceSampling(); v != nil {
		b.SampleByID = v.GetValue()
	}
	return b, nil
}
