package extension

import (
	"fmt"
	"maps"
	"strings"
)

// TableDoc is the page that lists every Envoy extension with its state in
// Outrigger; refusals of an extension point at it.
const TableDoc = "docs/extensions.md"

// SetUnsupported records why the proxy does not implement some of Envoy's
// extensions, keyed by name in either spelling, so that refusing one says
// why (Refusal).
func (e *Registry) SetUnsupported(reasons map[string]string) {
	e.unsupported = make(map[string]string, len(reasons))
	for name, why := range reasons {
		e.unsupported[canonicalName(name)] = why
	}
}

// Unsupported returns a copy of what SetUnsupported recorded, keyed by
// canonical name (without the envoy. prefix).
func (e *Registry) Unsupported() map[string]string {
	if e == nil {
		return nil
	}
	return maps.Clone(e.unsupported)
}

// Refusal is the end of the message refusing a typed_config of type
// typeURL (or, when typeURL is empty, the extension called name): the
// extension's Envoy name and why it is not supported when the table knows
// it, then a pointer to the table, e.g.
// " (envoy.filters.network.redis_proxy: a protocol proxy Outrigger does not
// carry); see docs/extensions.md". The name implied by the config type comes
// first, as the type is what selects an extension; the configured name is
// the fallback (the Envoy name of a config type is not always its package).
func (e *Registry) Refusal(typeURL, name string) string {
	if e != nil {
		for _, n := range []string{nameOfType(typeURL), name} {
			if why, ok := e.unsupported[canonicalName(n)]; ok && n != "" {
				return fmt.Sprintf(" (%s%s: %s); see %s", envoyPrefix, canonicalName(n), why, TableDoc)
			}
		}
	}
	return "; see " + TableDoc
}

// nameOfType is the extension name Envoy's naming convention gives the
// config type of a type URL: envoy.extensions.<path>.vN.<Message> is the
// config of envoy.<path> (N may be 3, 4alpha...). Other types yield "".
func nameOfType(typeURL string) string {
	rest, ok := strings.CutPrefix(TypeName(typeURL), "envoy.extensions.")
	if !ok {
		return ""
	}
	parts := strings.Split(rest, ".")
	for i, p := range parts {
		if i > 0 && isVersion(p) {
			return envoyPrefix + strings.Join(parts[:i], ".")
		}
	}
	return ""
}

// isVersion reports whether a package name component is an API version:
// v3, v4alpha, v1beta1.
func isVersion(p string) bool {
	rest, ok := strings.CutPrefix(p, "v")
	if !ok {
		return false
	}
	digits := strings.TrimLeft(rest, "0123456789")
	if len(digits) == len(rest) {
		return false
	}
	return digits == "" || strings.HasPrefix(digits, "alpha") || strings.HasPrefix(digits, "beta")
}
