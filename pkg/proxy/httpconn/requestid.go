package httpconn

import (
	"encoding/binary"
	"math/rand/v2"
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
