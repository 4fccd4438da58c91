package httpconn

import "unsafe"

// view returns b as a string without copying it. The connection manager
// reads a request head into a buffer it reuses for the next request, and
// everything that reads the request (routing, header edits, access-log
// lines) does so while that request is served; views let those readers
// take strings without a copy per header. A view must never outlive the
// request whose buffer it shows, and the buffer must not be written while
// a view of it is in use.
func view(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
