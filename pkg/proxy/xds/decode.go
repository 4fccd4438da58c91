package xds

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
)

// decoder turns a resource file into an Update.
type decoder struct {
	types *discoveryTypes
	// typeURL is the resources' type; resourceType builds them.
	typeURL      string
	resourceType protoreflect.MessageType
	// endpoints decodes large load assignments by parts; nil for other
	// types.
	endpoints *endpointReuse
	// whole keeps the clusters of the last response for the next; nil
	// for other types. (A small load assignment is not kept so: its
	// messages would cost several times the wire form that the endpoint
	// discovery keeps of it.)
	whole *resourceReuse
}

// newDecoder is the decoder of resources of typeURL, which must be linked
// into the binary.
func newDecoder(typeURL string) (decoder, error) {
	resourceType, err := protoregistry.GlobalTypes.FindMessageByURL(typeURL)
	if err != nil {
		return decoder{}, fmt.Errorf("resource type %q is not linked in: %w", typeURL, err)
	}
	types, err := newDiscoveryTypes()
	if err != nil {
		return decoder{}, err
	}
	d := decoder{types: types, typeURL: typeURL, resourceType: resourceType}
	switch typeURL {
	case endpointTypeURL:
		d.endpoints = new(endpointReuse)
	case clusterTypeURL:
		d.whole = new(resourceReuse)
	}
	return d, nil
}

// rejection marks an error that rejects an update (Envoy's configRejected:
// the file was read, its contents refused) rather than a failure to read
// it.
type rejection struct{ err error }

func (r *rejection) Error() string { return r.err.Error() }
func (r *rejection) Unwrap() error { return r.err }

// errEmptyFile refuses an empty file rather than reading it as an empty
// response, which would remove every resource: a file being created in
// place is empty at first, and Envoy refuses empty files too.
var errEmptyFile = errors.New("the file is empty (an update is made by moving a complete file into place)")

// decodeFile reads and decodes the DiscoveryResponse at path; see
// decodeBytes.
func (d *decoder) decodeFile(path string, allowUnknown bool) (Update, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Update{}, nil, fmt.Errorf("read configuration: %w", err)
	}
	return d.decodeBytes(path, data, allowUnknown)
}

// decodeBytes decodes a DiscoveryResponse read from path (whose extension
// gives the format). With allowUnknown, unknown fields are dropped and
// their paths returned; without, an update with unknown fields is a
// *rejection whose error lists them (another problem in the file makes it
// a plain failure). Resources of another type than expected are a
// *rejection too.
func (d *decoder) decodeBytes(path string, data []byte, allowUnknown bool) (Update, []string, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Update{}, nil, errEmptyFile
	}
	resp := d.types.newResponse()
	dec := bootstrap.Decoder{AllowUnknown: allowUnknown, Types: d.types.resolver}
	unknown, err := dec.DecodeBytes(path, data, resp)
	if err != nil {
		if !allowUnknown && onlyUnknownFields(dec, path, data, d.types) {
			return Update{}, nil, &rejection{err: err}
		}
		return Update{}, nil, err
	}
	// The file was read; resources of the wrong type are refused as Envoy
	// refuses them, after the load: a rejection.
	u, err := d.update(resp)
	if err != nil {
		return Update{}, nil, &rejection{err: err}
	}
	return u, unknown, nil
}

// onlyUnknownFields reports whether the data that dec refused decodes once
// unknown fields are allowed: its only problems are unknown fields.
func onlyUnknownFields(dec bootstrap.Decoder, path string, data []byte, types *discoveryTypes) bool {
	dec.AllowUnknown = true
	_, err := dec.DecodeBytes(path, data, types.newResponse())
	return err == nil
}

// update extracts the version and the resources of a decoded response,
// checking their types. Every problem is reported, as errors.Join of
// *bootstrap.FieldError.
func (d *decoder) update(resp protoreflect.Message) (Update, error) {
	fields := resp.Descriptor().Fields()
	u := Update{VersionInfo: resp.Get(fields.ByName("version_info")).String()}
	var errs []error
	if t := resp.Get(fields.ByName("type_url")).String(); t != "" && t != d.typeURL {
		errs = append(errs, fieldErrorf("type_url", "%q does not match the expected type %q", t, d.typeURL))
	}
	list := resp.Get(fields.ByName("resources")).List()
	for i := range list.Len() {
		path := "resources[" + strconv.Itoa(i) + "]"
		m, err := d.resource(list.Get(i).Message(), path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		u.Resources = append(u.Resources, m)
	}
	if len(errs) > 0 {
		return Update{}, errors.Join(errs...)
	}
	return u, nil
}

// resource decodes one element of resources, an Any holding a resource of
// the expected type or an envoy.service.discovery.v3.Resource wrapping one.
func (d *decoder) resource(a protoreflect.Message, path string) (proto.Message, error) {
	typeURL, value := anyFields(a)
	if typeName(typeURL) != string(resourceName) {
		return d.unpack(typeURL, value, path)
	}
	mt, err := d.types.resolver.FindMessageByURL(typeURL)
	if err != nil {
		return nil, fieldErrorf(path, "unknown type %q", typeURL)
	}
	wrapper := mt.New()
	if err := proto.Unmarshal(value, wrapper.Interface()); err != nil {
		return nil, fieldErrorf(path, "invalid %s: %v", resourceName, err)
	}
	wf := wrapper.Descriptor().Fields()
	inner := childPath(path, "resource")
	if !wrapper.Has(wf.ByName("resource")) {
		return nil, fieldErrorf(inner, "required: the wrapped resource")
	}
	innerURL, innerValue := anyFields(wrapper.Get(wf.ByName("resource")).Message())
	m, err := d.unpack(innerURL, innerValue, inner)
	if err != nil {
		return nil, err
	}
	// A wrapper may name its resource; the name must then be the
	// resource's own, or the two would disagree on what is updated.
	if name := wrapper.Get(wf.ByName("name")).String(); name != "" {
		if own, ok := resourceNameOf(m); ok && own != name {
			return nil, fieldErrorf(childPath(path, "name"), "%q does not match the wrapped resource's name %q", name, own)
		}
	}
	return m, nil
}

// unpack decodes an Any's value, which must be of the expected type, into
// that type's generated message.
func (d *decoder) unpack(typeURL string, value []byte, path string) (proto.Message, error) {
	if typeURL != d.typeURL {
		return nil, fieldErrorf(path, "type %q does not match the expected type %q", typeURL, d.typeURL)
	}
	m := d.resourceType.New().Interface()
	if err := proto.Unmarshal(value, m); err != nil {
		return nil, fieldErrorf(path, "invalid %s: %v", typeName(typeURL), err)
	}
	return m, nil
}

// anyFields reads an Any's fields by reflection: the Anys inside the
// discovery messages are dynamic messages, not *anypb.Any.
func anyFields(a protoreflect.Message) (typeURL string, value []byte) {
	fields := a.Descriptor().Fields()
	return a.Get(fields.ByName("type_url")).String(), a.Get(fields.ByName("value")).Bytes()
}

// resourceNameOf returns the value of m's string field "name", if it has
// one (listeners, clusters and route configurations all do).
func resourceNameOf(m proto.Message) (string, bool) {
	r := m.ProtoReflect()
	fd := r.Descriptor().Fields().ByName("name")
	if fd == nil || fd.Kind() != protoreflect.StringKind || fd.IsList() {
		return "", false
	}
	return r.Get(fd).String(), true
}

// typeName is the message name a type URL designates: what follows the
// last '/', as protobuf's resolvers read it.
func typeName(typeURL string) string {
	return typeURL[strings.LastIndexByte(typeURL, '/')+1:]
}

// childPath is the path of field name inside the message at parent.
func childPath(parent, name string) string {
	return parent + "." + name
}

// fieldErrorf builds a located problem, in the bootstrap's error type so
// that callers handle static and dynamic configuration errors alike.
func fieldErrorf(path, format string, args ...any) *bootstrap.FieldError {
	return &bootstrap.FieldError{Path: path, Reason: fmt.Sprintf(format, args...)}
}
