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
	*hex8 = binary.BigEndian.Uint32(u[0:4])
	s := uuidText(&u)
	return append(dst, s[:]...)
}

// uuidText writes u in the UUID's text form: lower-case hexadecimal in
// groups of 8, 4, 4, 4 and 12 digits separated by '-'. Written into an
// array of its own and appended once: byte by byte, each append checked
// the capacity.
func uuidText(u *[16]byte) [36]byte {
	var s [36]byte
	binary.BigEndian.PutUint64(s[0:], hex4(binary.BigEndian.Uint32(u[0:])))
	s[8] = '-'
	h := hex4(binary.BigEndian.Uint32(u[4:]))
	binary.BigEndian.PutUint32(s[9:], uint32(h>>32))
	s[13] = '-'
	binary.BigEndian.PutUint32(s[14:], uint32(h))
	s[18] = '-'
	h = hex4(binary.BigEndian.Uint32(u[8:]))
	binary.BigEndian.PutUint32(s[19:], uint32(h>>32))
	s[23] = '-'
	binary.BigEndian.PutUint32(s[24:], uint32(h))
	binary.BigEndian.PutUint64(s[28:], hex4(binary.BigEndian.Uint32(u[12:])))
	return s
}

// hex4 returns the 8 lower-case hexadecimal digits of v, the most
// significant first when the result is stored big-endian: each nibble is
// spread into a byte of its own, then all eight become digits at once
// (those of 10 and more moved on from '9'+1 to 'a').
func hex4(v uint32) uint64 {
	const ones = 0x0101010101010101
	x := uint64(v)
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f
	letters := (x + 6*ones) >> 4 & ones // 1 in each byte of 10 or more
	return x + '0'*ones + letters*('a'-'9'-1)
}
