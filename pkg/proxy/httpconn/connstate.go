package httpconn

import "sync"

// connState is what HTTP filters keep per downstream connection
// (httpfilter.Stream.ConnectionState), such as a per-connection token
// bucket: Envoy's filter state of connection lifespan. Its map is made on
// first use, so a connection whose filters keep nothing pays nothing.
type connState struct {
	mu sync.Mutex
	m  map[any]any
}

// get returns the value under key, made by create on first use. HTTP/2
// streams of one connection call it at once.
func (c *connState) get(key any, create func() any) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[key]; ok {
		return v
	}
	if c.m == nil {
		c.m = make(map[any]any)
	}
	v := create()
	c.m[key] = v
	return v
}
