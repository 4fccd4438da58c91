package admin

import (
	"errors"
	"fmt"
	"net/http"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// contentTypeDumpError is the content type of /config_dump's refusals
// (Envoy's, without a charset).
const contentTypeDumpError = "text/plain"

// initDumpListenerMask is the one component /init_dump?mask= knows.
const initDumpListenerMask = "listener"

// configDumpRoutes returns /config_dump and /init_dump when a
// ConfigDumpSource is wired.
func (a *Admin) configDumpRoutes() []Route {
	src := a.opts.ConfigDump
	if src == nil {
		return nil
	}
	return []Route{
		{
			Path: "/config_dump",
			Help: "dump current proxy configs (experimental)",
			Params: []Param{
				{Name: "resource", Help: "The resource to dump", Kind: ParamString},
				{Name: "mask", Help: "The mask to apply. When both resource and mask are specified, " +
					"the mask is applied to every element in the desired repeated field so that only a " +
					"subset of fields are returned. The mask is parsed as a google.protobuf.FieldMask",
					Kind: ParamString},
				{Name: "name_regex", Help: "Dump only the currently loaded configurations whose names " +
					"match the specified regex. Can be used with both resource and mask query parameters.",
					Kind: ParamString},
				{Name: "include_eds", Help: "Dump currently loaded configuration including EDS. " +
					"See the response definition for more information", Kind: ParamFlag},
			},
			Handler: func(w *Response, r *Request) { serveConfigDump(w, r, src) },
		},
		{
			Path: "/init_dump",
			Help: "dump current proxy init manager information (experimental)",
			Params: []Param{
				{Name: "mask", Help: "The desired component to dump unready targets. The mask is parsed " +
					"as a google.protobuf.FieldMask. For example, get the unready targets of all " +
					"listeners with /init_dump?mask=listener", Kind: ParamString},
			},
			Handler: func(w *Response, r *Request) { serveInitDump(w, r, src) },
		},
	}
}

// dumpError is a refused /config_dump: its status and Envoy's message.
type dumpError struct {
	code int
	body string
}

func (e *dumpError) Error() string { return e.body }

// serveConfigDump answers the configuration as a ConfigDump message: every
// component's dump, or with ?resource= every element of that list, each
// packed in an Any. ?name_regex= keeps the resources whose name matches,
// ?mask= keeps the fields it names, and secrets are always redacted.
func serveConfigDump(w *Response, r *Request, src ConfigDumpSource) {
	names, err := compileNameRegex(r.Params.Get("name_regex"))
	if err != nil {
		w.SetContentType(contentTypeDumpError)
		w.Text(http.StatusBadRequest, err.Error())
		return
	}
	dumps := src.ConfigDump(r.Params.Has("include_eds"))
	mask, masked := r.Params.Lookup("mask")
	var out *adminv3.ConfigDump
	if resource := r.Params.Get("resource"); resource != "" {
		out, err = dumpResource(dumps, resource, names, mask, masked)
	} else {
		out, err = dumpAll(dumps, names, mask, masked)
	}
	var de *dumpError
	switch {
	case errors.As(err, &de):
		w.SetContentType(contentTypeDumpError)
		w.Text(de.code, de.body)
	case err != nil:
		w.Fail(err)
	default:
		w.Proto(out, false)
	}
}

// dumpAll packs every component's dump, each filtered by name, masked and
// redacted. A mask that does not fit a dump's type leaves that dump out;
// a mask that fits none is refused.
func dumpAll(dumps []proto.Message, names *nameMatcher, mask string, masked bool) (*adminv3.ConfigDump, error) {
	fm := parseFieldMask(mask)
	out := &adminv3.ConfigDump{}
	for _, d := range dumps {
		if d == nil {
			continue
		}
		msg := proto.Clone(d).ProtoReflect()
		names.filter(msg)
		if masked && fm.apply(msg) != nil {
			continue
		}
		redact(msg)
		if err := appendAny(out, msg.Interface()); err != nil {
			return nil, err
		}
	}
	if masked && len(out.Configs) == 0 {
		return nil, &dumpError{http.StatusBadRequest,
			fmt.Sprintf("FieldMask %s could not be successfully applied to any configs.", mask)}
	}
	return out, nil
}

// dumpResource packs every element of the list field named resource, from
// the first dump that has a field of that name, each filtered by name,
// masked and redacted.
func dumpResource(dumps []proto.Message, resource string, names *nameMatcher, mask string, masked bool) (*adminv3.ConfigDump, error) {
	fm := parseFieldMask(mask)
	for _, d := range dumps {
		if d == nil {
			continue
		}
		fd := d.ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name(resource))
		if fd == nil {
			continue
		}
		if !fd.IsList() || fd.Message() == nil {
			return nil, &dumpError{http.StatusBadRequest,
				fmt.Sprintf("%s is not a repeated field. Use ?mask=%s to get only this field", fd.Name(), fd.Name())}
		}
		out := &adminv3.ConfigDump{}
		list := proto.Clone(d).ProtoReflect().Mutable(fd).List()
		for i := range list.Len() {
			elem := list.Get(i).Message()
			if !names.keep(elem) {
				continue
			}
			if masked {
				if err := fm.apply(elem); err != nil {
					return nil, &dumpError{http.StatusBadRequest,
						fmt.Sprintf("FieldMask %s could not be successfully used.", fm.debugString())}
				}
			}
			redact(elem)
			if err := appendAny(out, elem.Interface()); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, &dumpError{http.StatusNotFound, fmt.Sprintf("%s not found in config dump", resource)}
}

// appendAny packs m into the dump's configs.
func appendAny(out *adminv3.ConfigDump, m proto.Message) error {
	a := &anypb.Any{}
	if err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		return fmt.Errorf("pack %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	out.Configs = append(out.Configs, a)
	return nil
}

// serveInitDump answers the targets that have not finished initializing.
// Listeners are the only component with an init manager to show, so
// ?mask=listener shows them all and any other mask shows nothing, as in
// Envoy.
func serveInitDump(w *Response, r *Request, src ConfigDumpSource) {
	if mask, ok := r.Params.Lookup("mask"); ok && mask != initDumpListenerMask {
		w.Proto(&adminv3.UnreadyTargetsDumps{}, false)
		return
	}
	d := src.InitDump()
	if d == nil {
		d = &adminv3.UnreadyTargetsDumps{}
	}
	w.Proto(d, false)
}
