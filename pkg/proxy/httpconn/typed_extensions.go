package httpconn

import (
	"errors"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// compileTypedExtensions resolves the connection manager's list field of
// extensions of one category (kind names one in errors, "early header
// mutation extension") and compiles each with its factory, of type F.
// Errors name the entry ("field[1].typed_config...").
func compileTypedExtensions[F, T any](field, kind, category string, exts []*corev3.TypedExtensionConfig, deps Deps, compile func(F, proto.Message) (T, error)) ([]T, error) {
	var (
		out  []T
		errs []error
	)
	for i, tc := range exts {
		path := fmt.Sprintf("%s[%d]", field, i)
		ext, msg, err := deps.Extensions.Resolve(extension.Ref{Kind: kind, Category: category, Name: tc.GetName(), Config: tc.GetTypedConfig()}, false)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", path, err))
			continue
		}
		f, ok := ext.Factory.(F)
		if !ok {
			errs = append(errs, fmt.Errorf("%s.typed_config: extension %q is not an %s", path, ext.Name, kind))
			continue
		}
		v, err := compile(f, msg)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.typed_config.%w", path, err))
			continue
		}
		out = append(out, v)
	}
	return out, errors.Join(errs...)
}
