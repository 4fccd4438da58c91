package grpcstats

// frameCounter counts the gRPC messages of a body as it passes in pieces
// of any size: each message is a 5-byte prefix (a flag byte and a
// big-endian length) then its bytes. A message counts when its first
// byte is seen, as Envoy's frame inspector counts.
type frameCounter struct {
	// header holds the prefix bytes seen of the current message, n of
	// them; remaining is how many of its payload bytes are still to come.
	header    [5]byte
	n         int
	remaining uint64
}

// inspect reads p and returns how many messages began in it.
func (c *frameCounter) inspect(p []byte) uint64 {
	var begun uint64
	for len(p) > 0 {
		if c.remaining > 0 {
			skip := min(c.remaining, uint64(len(p)))
			c.remaining -= skip
			p = p[skip:]
			continue
		}
		if c.n == 0 {
			begun++
		}
		k := copy(c.header[c.n:], p)
		c.n += k
		p = p[k:]
		if c.n == len(c.header) {
			h := c.header
			c.remaining = uint64(h[1])<<24 | uint64(h[2])<<16 | uint64(h[3])<<8 | uint64(h[4])
			c.n = 0
		}
	}
	return begun
}
