// Request ids as Envoy's UUID extension (envoy.request_id.uuid)
// generates them, shared by the connection manager and the TCP proxy's
// tunnels.

package requestid

import (
	"encoding/binary"
	"math/rand/v2"
)

// AppendUUID appends a random (version 4) UUID in its text form, the
// request id Envoy's UUID extension generates (x-request-id, the TCP
// proxy's tunnel request id). The bits come from math/rand/v2's
// runtime source: ChaCha8 per thread, seeded by the operating system,
// unpredictable and lock-free.
func AppendUUID(dst []byte) []byte {
	var hex8 uint32
	return AppendUUIDHex8(dst, &hex8)
}

// AppendUUIDHex8 is AppendUUID, and also stores in hex8 the number its
// first 8 hexadecimal digits write, which the tracing's sampling reads
// (parseHex8): known here, it need not be read back.
func AppendUUIDHex8(dst []byte, hex8 *uint32) []byte {
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
