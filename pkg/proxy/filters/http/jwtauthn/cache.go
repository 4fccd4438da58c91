package jwtauthn

import (
	"container/list"
	"sync"
)

// jwtCache is a provider's jwt_cache_config: tokens that verified, kept
// (least recently used evicted first) so that their signature is not
// checked again. A token is still checked for time, issuer and audience
// on every use; one found expired leaves the cache.
type jwtCache struct {
	size, maxTokenSize int

	mu    sync.Mutex
	order *list.List
	byRaw map[string]*list.Element
}

func newJWTCache(size, maxTokenSize int) *jwtCache {
	return &jwtCache{size: size, maxTokenSize: maxTokenSize, order: list.New(), byRaw: make(map[string]*list.Element, size)}
}

// lookup returns the cached token, nil when absent or no longer valid at
// now (with the skew).
func (c *jwtCache) lookup(raw string, now, skew int64) *token {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byRaw[raw]
	if !ok {
		return nil
	}
	t := e.Value.(*token)
	if t.checkTime(now, skew) != statusOK {
		c.order.Remove(e)
		delete(c.byRaw, raw)
		return nil
	}
	c.order.MoveToFront(e)
	return t
}

// insert keeps a verified token.
func (c *jwtCache) insert(t *token) {
	if c.maxTokenSize > 0 && len(t.raw) > c.maxTokenSize {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byRaw[t.raw]; ok {
		return
	}
	c.byRaw[t.raw] = c.order.PushFront(t)
	for c.order.Len() > c.size {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.byRaw, old.Value.(*token).raw)
	}
}
