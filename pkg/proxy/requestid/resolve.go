package requestid

import (
	"errors"
	"fmt"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// Resolve compiles a RequestIDExtension (the connection manager's
// request_id_extension, tcp_proxy tunneling's) with the registry's
// request id extensions. As in Envoy, the extension is chosen by the type
// of its typed_config, which is required. Errors name the field below
// the RequestIDExtension.
func Resolve(reg *extension.Registry, rid *hcmv3.RequestIDExtension) (Behaviour, error) {
	if reg == nil {
		return Behaviour{}, errors.New("typed_config: no request id extensions in this context")
	}
	ext, msg, err := reg.Resolve(extension.Ref{
		Kind: "request id extension", Category: Category, Config: rid.GetTypedConfig(),
	}, false)
	if err != nil {
		return Behaviour{}, err
	}
	f, ok := ext.Factory.(Factory)
	if !ok {
		return Behaviour{}, fmt.Errorf("typed_config: extension %q is not a request id extension", ext.Name)
	}
	b, err := f.Compile(msg)
	if err != nil {
		return Behaviour{}, fmt.Errorf("typed_config: %w", err)
	}
	return b, nil
}
