package admin

import "net/http"

// serveResetCounters zeroes every counter as the admin shows it, and clears
// the recent lookups as Envoy does. Only local output changes: the store
// keeps the increments that sinks have not received yet, so the next flush
// still sends them (the specification: data sent to a metrics sink is not
// dropped).
func (f *statsFamily) serveResetCounters(w *Response, _ *Request) {
	f.src.Store().ResetCounters()
	w.Text(http.StatusOK, "OK\n")
}
