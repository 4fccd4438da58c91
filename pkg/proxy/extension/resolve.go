package extension

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Ref is how a configuration names one extension: its name, and its
// typed_config, which may be nil or empty ({}).
type Ref struct {
	// Kind is what the extension is to the user, for messages: "filter",
	// "access logger".
	Kind     string
	Category string
	Name     string
	Config   *anypb.Any
}

// Resolve finds the extension a configuration names and decodes its
// configuration, as Envoy does: by the type of typed_config when it has
// one, whatever the name; otherwise by the name, either spelling, with the
// extension's empty configuration, unless byName is false (Envoy's runtime
// guard no_extension_lookup_by_name is set), which then fails with Envoy's
// own message. A disabled extension (--disable-extensions) is refused.
// Errors name the field below the referring message ("typed_config: ...",
// "name: ...").
func (e *Registry) Resolve(ref Ref, byName bool) (Extension, proto.Message, error) {
	tc := ref.Config
	var (
		ext Extension
		ok  bool
		msg proto.Message
	)
	if tc.GetTypeUrl() == "" && len(tc.GetValue()) == 0 {
		if !byName {
			return Extension{}, nil, fmt.Errorf("typed_config: Didn't find a registered implementation for '%s' with type URL: '%s'", ref.Name, tc.GetTypeUrl())
		}
		if e != nil {
			ext, ok = e.ByName(ref.Category, ref.Name)
		}
		if !ok || ext.Config == nil {
			return Extension{}, nil, fmt.Errorf("name: %s %q without typed_config is not supported by Outrigger%s", ref.Kind, ref.Name, e.Refusal("", ref.Name))
		}
		msg = proto.Clone(ext.Config)
	} else {
		if e != nil {
			ext, ok = e.LookupIn(ref.Category, tc.GetTypeUrl())
		}
		if !ok || !sameName(ext.Category, ref.Category) {
			return Extension{}, nil, fmt.Errorf("typed_config: %s type %s is not supported by Outrigger%s", ref.Kind, TypeName(tc.GetTypeUrl()), e.Refusal(tc.GetTypeUrl(), ref.Name))
		}
		var err error
		if msg, err = tc.UnmarshalNew(); err != nil {
			return Extension{}, nil, fmt.Errorf("typed_config: %w", err)
		}
	}
	if ext.Disabled {
		return Extension{}, nil, fmt.Errorf("typed_config: extension %q is disabled by --disable-extensions", ext.Name)
	}
	return ext, msg, nil
}

// Finds reports whether Resolve would find an enabled extension of
// ref.Category for ref, whatever it then makes of its configuration. Envoy
// leaves out an optional filter (is_optional) it has no factory for; this
// is that test.
func (e *Registry) Finds(ref Ref, byName bool) bool {
	if e == nil {
		return false
	}
	tc := ref.Config
	var (
		ext Extension
		ok  bool
	)
	if tc.GetTypeUrl() == "" && len(tc.GetValue()) == 0 {
		if !byName {
			return false
		}
		ext, ok = e.ByName(ref.Category, ref.Name)
		ok = ok && ext.Config != nil
	} else {
		ext, ok = e.LookupIn(ref.Category, tc.GetTypeUrl())
		ok = ok && sameName(ext.Category, ref.Category)
	}
	return ok && !ext.Disabled
}

// The runtime guard that forbids finding an extension by its name, in both
// spellings. Envoy sets it to true from 1.22; Outrigger, like Envoy before,
// looks names up unless it is set.
const (
	noLookupByNameKey      = "envoy.reloadable_features.no_extension_lookup_by_name"
	noLookupByNameProxyKey = "proxy.reloadable_features.no_extension_lookup_by_name"
)

// FlagReader reads a runtime feature flag.
type FlagReader interface {
	Bool(key string, def bool) bool
}

// LookupByName reports whether the runtime lets Resolve find extensions
// by name (the byName argument); a nil runtime does.
func LookupByName(rt FlagReader) bool {
	if rt == nil {
		return true
	}
	return !rt.Bool(noLookupByNameProxyKey, rt.Bool(noLookupByNameKey, false))
}
