package httpfilter

import (
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// OptionalMissing reports whether f is an optional filter (is_optional)
// that no enabled extension of the categories would configure: Envoy
// leaves such a filter out of the chain, with a warning, where it refuses
// a filter that is not optional. A filter that is found is built as any
// other, and its configuration's errors are errors.
func OptionalMissing(f *hcmv3.HttpFilter, reg *extension.Registry, byName bool, categories ...string) bool {
	if !f.GetIsOptional() {
		return false
	}
	for _, c := range categories {
		if reg.Finds(extension.Ref{Kind: "filter", Category: c, Name: f.GetName(), Config: f.GetTypedConfig()}, byName) {
			return false
		}
	}
	return true
}
