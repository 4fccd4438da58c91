package filter

import (
	"fmt"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// compileExtension compiles an extension_filter: the registry's extension
// of ExtensionCategory that typed_config (or the name) designates. Errors
// name the field below extension_filter.
func compileExtension(name string, config *anypb.Any, ctx Context) (Filter, error) {
	ext, msg, err := ctx.Extensions.Resolve(extension.Ref{
		Kind: "access log extension filter", Category: ExtensionCategory, Name: name, Config: config,
	}, ctx.ByName)
	if err != nil {
		return nil, err
	}
	factory, ok := ext.Factory.(ExtensionFactory)
	if !ok {
		return nil, fmt.Errorf("typed_config: extension %q is not an access log filter", ext.Name)
	}
	f, err := factory.Compile(msg)
	if err != nil {
		return nil, fmt.Errorf("typed_config.%w", err)
	}
	return f, nil
}
