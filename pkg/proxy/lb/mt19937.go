package lb

// mt19937 is the 32-bit Mersenne Twister of C++'s std::mt19937, which
// Envoy's bounded-load hashing seeds with the request's hash: the same
// generator gives the same probe order for the same hash as Envoy.
type mt19937 struct {
	state [624]uint32
	i     int
}

// seed initialises the generator as std::mt19937(seed) does (the seed
// taken modulo 2^32).
func (m *mt19937) seed(s uint64) {
	m.state[0] = uint32(s)
	for i := 1; i < len(m.state); i++ {
		prev := m.state[i-1]
		m.state[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	m.i = len(m.state)
}

// next returns the next 32-bit output.
func (m *mt19937) next() uint32 {
	const (
		n, mid              = 624, 397
		upper, lower uint32 = 0x80000000, 0x7fffffff
		matrix       uint32 = 0x9908b0df
	)
	if m.i >= n {
		for k := range n {
			y := m.state[k]&upper | m.state[(k+1)%n]&lower
			v := m.state[(k+mid)%n] ^ y>>1
			if y&1 != 0 {
				v ^= matrix
			}
			m.state[k] = v
		}
		m.i = 0
	}
	y := m.state[m.i]
	m.i++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}

// below returns a number in [0, k) (k > 0) as Envoy's bounded-load
// hashing draws it: the output divided into k equal buckets, draws that
// land past the last whole bucket drawn again.
func (m *mt19937) below(k uint32) uint32 {
	bucket := (uint64(1) << 32) / uint64(k)
	for {
		if x := uint64(m.next()) / bucket; x < uint64(k) {
			return uint32(x)
		}
	}
}
