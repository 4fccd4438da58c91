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
	var hex8 uint32
	return appendUUIDHex8(dst, &hex8)
}

// appendUUIDHex8 is appendUUID, and also stores in hex8 the number its
// first 8 hexadecimal digits write, which the tracing's sampling reads
// (parseHex8): known here, it need not be read back.
func appendUUIDHex8(dst []byte, hex8 *uint32) []byte {
	var u [16]byte
	binary.LittleEndian.PutUint64(u[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(u[8:], rand.Uint64())
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	// Written into an array of its own and appended once: byte by byte,
	// each append checked the capacity.
	var s [36]byte
	hexInto(s[0:8], u[0:4])
	s[8] = '-'
	hexInto(s[9:13], u[4:6])
	s[13] = '-'
	hexInto(s[14:18], u[6:8])
	s[18] = '-'
	hexInto(s[19:23], u[8:10])
	s[23] = '-'
	hexInto(s[24:36], u[10:16])
	*hex8 = binary.BigEndian.Uint32(u[0:4])
	return append(dst, s[:]...)
}

// hexInto writes b in lower-case hexadecimal into dst, which is twice as
// long.
func hexInto(dst, b []byte) {
	const hex = "0123456789abcdef"
	_ = dst[2*len(b)-1]
	for i, c := range b {
		dst[2*i], dst[2*i+1] = hex[c>>4], hex[c&0x0f]
	}
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
