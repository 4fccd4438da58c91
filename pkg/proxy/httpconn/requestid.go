package httpconn

import (
	"fmt"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/requestid"
)

// readRequestID resolves request_id_extension to how the connection
// manager treats x-request-id; without one, Envoy's UUID extension with
// its defaults.
func readRequestID(cfg *hcmv3.HttpConnectionManager, deps Deps) (requestid.Behaviour, error) {
	rid := cfg.GetRequestIdExtension()
	if rid == nil {
		return requestid.Default(), nil
	}
	b, err := requestid.Resolve(deps.Extensions, rid)
	if err != nil {
		return requestid.Behaviour{}, fmt.Errorf("request_id_extension.%w", err)
	}
	return b, nil
}
