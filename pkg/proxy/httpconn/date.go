package httpconn

import (
	"net/http"
	"sync/atomic"
	"time"
)

// dateCache keeps the date header value of the current second, as Envoy's
// cached date provider does: formatting a date per response would cost
// more than the rest of the header.
type dateCache struct {
	cur atomic.Pointer[dateValue]
}

type dateValue struct {
	sec   int64
	value string
}

// get returns the date header value for now.
func (d *dateCache) get(now time.Time) string {
	sec := now.Unix()
	if v := d.cur.Load(); v != nil && v.sec == sec {
		return v.value
	}
	v := &dateValue{sec: sec, value: now.UTC().Format(http.TimeFormat)}
	d.cur.Store(v)
	return v.value
}
