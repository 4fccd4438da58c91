package cache

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/outrigger-dev/outrigger/pkg/proxy/httpfilter"
)

// Store is a cache storage (Envoy's HttpCache): responses by key. An
// Entry, once stored, is never modified, so readers share it without
// locks; an update stores a new Entry under the same key.
type Store interface {
	// Get returns the entry stored under key.
	Get(key string) (*Entry, bool)
	// Put stores e under key, in place of what was there. The store may
	// decline (an entry larger than it holds) or evict others.
	Put(key string, e *Entry)
	// Limit is the largest body the store keeps: a longer response is
	// not recorded.
	Limit() int
}

// StoreFactory is the Factory of a storage extension (category
// envoy.http.cache).
type StoreFactory interface {
	// NewStore checks the storage's typed_config and returns its store;
	// errors name the field below typed_config.
	NewStore(config proto.Message, ctx httpfilter.Context) (Store, error)
}

// Entry is one stored response, or the marker of a resource whose
// responses vary (Vary): then VaryNames lists the request headers that
// select one of them, each stored under a key of its own.
type Entry struct {
	// Status is the response's status code.
	Status int
	// Header is the response head, lower-case names in order, without
	// the framing headers.
	Header [][2]string
	// Body is the whole response body.
	Body []byte
	// ResponseTime is when the response (or the 304 that last validated
	// it) was received.
	ResponseTime time.Time
	// VaryNames are the request headers a Vary marker lists, sorted
	// and lower case; nil for a response.
	VaryNames []string
}

// Size is the memory an entry holds, roughly: what a store's bound
// counts.
func (e *Entry) Size() int {
	n := len(e.Body) + 64
	for _, h := range e.Header {
		n += len(h[0]) + len(h[1]) + 32
	}
	for _, v := range e.VaryNames {
		n += len(v) + 16
	}
	return n
}

// get is the entry's first value of header name.
func (e *Entry) get(name string) (string, bool) {
	for _, h := range e.Header {
		if h[0] == name {
			return h[1], true
		}
	}
	return "", false
}

// entryHeaders reads an entry's head as a headerGetter.
type entryHeaders struct{ e *Entry }

// Get implements headerGetter.
func (h entryHeaders) Get(name string) (string, bool) { return h.e.get(name) }
