package httpconn

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/router"
)

// readIgnoreUpgrade compiles http_protocol_options.ignore_http_11_upgrade:
// an HTTP/1.1 request whose Upgrade value one of them matches is served
// as a plain request, its Upgrade header and Connection's upgrade token
// removed, as Envoy's codec does. nil when the list is empty.
func readIgnoreUpgrade(h1 *corev3.Http1ProtocolOptions) (router.ListStringMatch, error) {
	list := h1.GetIgnoreHttp_11Upgrade()
	if len(list) == 0 {
		return nil, nil
	}
	ms := make(router.ListStringMatch, 0, len(list))
	for i, p := range list {
		m, err := router.CompileStringMatch(p)
		if err != nil {
			return nil, fmt.Errorf("http_protocol_options.ignore_http_11_upgrade[%d].%w", i, err)
		}
		ms = append(ms, &m)
	}
	return ms, nil
}
