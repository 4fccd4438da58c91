package bootstrap

import "google.golang.org/protobuf/reflect/protoreflect"

// supportedOriginalSrc lists the fields of the original_src listener and
// HTTP filters. The listener filter's bind_port, which Envoy does not
// implement (it ignores it), is refused.
var supportedOriginalSrc = map[protoreflect.FullName]fieldSupport{
	"envoy.extensions.filters.listener.original_src.v3.OriginalSrc.mark": {},
	"envoy.extensions.filters.http.original_src.v3.OriginalSrc.mark":     {},
}
