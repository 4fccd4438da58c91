package extauthz

import (
	"net"
	"strconv"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/accesslog"
	"github.com/outrigger-dev/outrigger/pkg/proxy/authzservice"
	"github.com/outrigger-dev/outrigger/pkg/proxy/netfilter"
)

// ShadowStateKey is the connection filter state key of a shadow_mode
// decision: Envoy's filter name.
const ShadowStateKey = "envoy.filters.network.ext_authz"

// The check results of a shadow decision, Envoy's ShadowDecision.CheckResult
// names and numbers.
const (
	shadowOK     = 1
	shadowDenied = 2
	shadowError  = 3
)

var shadowResultNames = [...]string{"UNSPECIFIED", "OK", "DENIED", "ERROR"}

// shadowDecision is the filter state a check leaves in shadow_mode in
// place of enforcing its answer, as Envoy's ShadowDecisionObject: the
// result and, for a denial, the status the service gave (403 when it gave
// none). Its PLAIN form is the JSON of Envoy's ShadowDecision message,
// its TYPED form that message, and it has the fields check_result and
// status_code.
type shadowDecision struct {
	// desc is the ShadowDecision message's descriptor, built once per
	// filter; nil leaves the TYPED form out.
	desc   protoreflect.MessageDescriptor
	result int32
	status uint32
}

var (
	_ accesslog.FilterStateObject  = shadowDecision{}
	_ accesslog.FilterStateFielder = shadowDecision{}
)

// FilterStateString implements accesslog.FilterStateObject: the
// message's JSON, as Envoy serializes the object.
func (d shadowDecision) FilterStateString() (string, bool) {
	s := `{"check_result":"` + shadowResultNames[d.result] + `"`
	if d.status != 0 {
		s += `,"status_code":` + strconv.FormatUint(uint64(d.status), 10)
	}
	return s + "}", true
}

// FilterStateProto implements accesslog.FilterStateObject.
func (d shadowDecision) FilterStateProto() proto.Message {
	if d.desc == nil {
		return nil
	}
	m := dynamicpb.NewMessage(d.desc)
	fields := d.desc.Fields()
	m.Set(fields.ByNumber(1), protoreflect.ValueOfEnum(protoreflect.EnumNumber(d.result)))
	if d.status != 0 {
		m.Set(fields.ByNumber(2), protoreflect.ValueOfUint32(d.status))
	}
	return m
}

// FilterStateField implements accesslog.FilterStateFielder, as Envoy's
// getField: check_result's name, and status_code when there is one.
func (d shadowDecision) FilterStateField(name string) (any, bool) {
	switch {
	case name == "check_result":
		return shadowResultNames[d.result], true
	case name == "status_code" && d.status != 0:
		return int64(d.status), true
	}
	return nil, false
}

// recordShadow leaves the decision of a check in the connection's filter
// state (shadow_mode), which the connection goes on regardless of.
func (f *Filter) recordShadow(c net.Conn, status authzservice.Status, resp *authv3.CheckResponse) {
	fs, ok := c.(netfilter.FilterStater)
	if !ok {
		return
	}
	d := shadowDecision{desc: f.shadowDesc}
	switch status {
	case authzservice.OK:
		d.result = shadowOK
	case authzservice.Denied:
		d.result = shadowDenied
		d.status = 403
		if code := resp.GetDeniedResponse().GetStatus().GetCode(); code != 0 {
			d.status = uint32(code)
		}
	default:
		d.result = shadowError
	}
	fs.SetFilterState(ShadowStateKey, d)
}

// shadowDecisionDescriptor builds the descriptor of Envoy's
// envoy.extensions.filters.network.ext_authz.ShadowDecision, a message of
// Envoy's source tree that no Go package carries.
func shadowDecisionDescriptor() (protoreflect.MessageDescriptor, error) {
	s := proto.String
	fd := &descriptorpb.FileDescriptorProto{
		Name:    s("outrigger/network_ext_authz_shadow_decision.proto"),
		Package: s("envoy.extensions.filters.network.ext_authz"),
		Syntax:  s("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: s("ShadowDecision"),
			EnumType: []*descriptorpb.EnumDescriptorProto{{
				Name: s("CheckResult"),
				Value: []*descriptorpb.EnumValueDescriptorProto{
					{Name: s("UNSPECIFIED"), Number: proto.Int32(0)},
					{Name: s("OK"), Number: proto.Int32(shadowOK)},
					{Name: s("DENIED"), Number: proto.Int32(shadowDenied)},
					{Name: s("ERROR"), Number: proto.Int32(shadowError)},
				},
			}},
			Field: []*descriptorpb.FieldDescriptorProto{
				{
					Name: s("check_result"), JsonName: s("checkResult"), Number: proto.Int32(1),
					Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
					Type:     descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum(),
					TypeName: s(".envoy.extensions.filters.network.ext_authz.ShadowDecision.CheckResult"),
				},
				{
					Name: s("status_code"), JsonName: s("statusCode"), Number: proto.Int32(2),
					Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
					Type:  descriptorpb.FieldDescriptorProto_TYPE_UINT32.Enum(),
				},
			},
		}},
	}
	file, err := protodesc.NewFile(fd, nil)
	if err != nil {
		return nil, err
	}
	return file.Messages().Get(0), nil
}
