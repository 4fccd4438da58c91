package lb

import "encoding/binary"

// murmurSeed is the seed of libstdc++'s std::hash<std::string>, which
// Envoy's ring hash uses with MURMUR_HASH_2.
const murmurSeed = 0xc70f6907

// murmur2 is the 64-bit MurmurHash2 of libstdc++'s _Hash_bytes, as Envoy's
// MurmurHash::murmurHash2 computes it, so that MURMUR_HASH_2 rings place
// hosts where Envoy's (and the std::hash based ones before them) do.
func murmur2(key string, seed uint64) uint64 {
	const mul = 0xc6a4a7935bd1e995
	n := len(key)
	hash := seed ^ (uint64(n) * mul)
	aligned := n &^ 7
	for p := 0; p < aligned; p += 8 {
		data := shiftMix(binary.LittleEndian.Uint64([]byte(key[p:p+8]))*mul) * mul
		hash ^= data
		hash *= mul
	}
	if rest := n & 7; rest != 0 {
		var data uint64
		for i := rest - 1; i >= 0; i-- {
			data = data<<8 | uint64(key[aligned+i])
		}
		hash ^= data
		hash *= mul
	}
	hash = shiftMix(hash) * mul
	return shiftMix(hash)
}

func shiftMix(v uint64) uint64 { return v ^ (v >> 47) }
