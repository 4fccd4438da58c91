package httpconn

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
	"github.com/outrigger-dev/outrigger/pkg/proxy/requestid"
)

// appendUUID appends a random (version 4) UUID in its text form, the
// x-request-id value Envoy generates. The bits come from math/rand/v2's
// runtime source: ChaCha8 per thread, seeded by the operating system,
// unpredictable and lock-free.
func appendUUID(dst []byte) []byte {
	var u [16]byte
	binary.LittleEndian.PutUint64(u[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(u[8:], rand.Uint64())
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	const hex = "0123456789abcdef"
	for i, b := range u {
		switch i {
		case 4, 6, 8, 10:
			dst = append(dst, '-')
		}
		dst = append(dst, hex[b>>4], hex[b&0x0f])
	}
	return dst
}

// readRequestID resolves request_id_extension to how the connection
// manager treats x-request-id; without one, Envoy's UUID extension with
// its defaults. As in Envoy, the extension is chosen by the type of its
// typed_config, which is required.
func readRequestID(cfg *hcmv3.HttpConnectionManager, deps Deps) (requestid.Behaviour, error) {
	rid := cfg.GetRequestIdExtension()
	if rid == nil {
		return requestid.Default(), nil
	}
	ext, msg, err := deps.Extensions.Resolve(extension.Ref{
		Kind: "request id extension", Category: requestid.Category, Config: rid.GetTypedConfig(),
	}, false)
	if err != nil {
		return requestid.Behaviour{}, fmt.Errorf("request_id_extension.%w", err)
	}
	f, ok := ext.Factory.(requestid.Factory)
	if !ok {
		return requestid.Behaviour{}, fmt.Errorf("request_id_extension.typed_config: extension %q is not a request id extension", ext.Name)
	}
	b, err := f.Compile(msg)
	if err != nil {
		return requestid.Behaviour{}, fmt.Errorf("request_id_extension.typed_config: %w", err)
	}
	return b, nil
}
