package extauthz

import "github.com/outrigger-dev/outrigger/pkg/proxy/router"

// headerRoom tracks how many more fields a response head may take with
// enforce_response_header_limits: an edit that would add a field to a
// head already at the connection manager's max_headers_count is omitted,
// as Envoy's filter does. A nil room does not limit.
type headerRoom struct {
	max, count int
	omitted    bool
}

// headerRanger is a header map that can list its fields.
type headerRanger interface {
	Range(fn func(name, value string) bool)
}

// newHeaderRoom counts h's fields, :status included as in Envoy's map.
func newHeaderRoom(h router.HeaderEditor, max int) *headerRoom {
	r := &headerRoom{max: max, count: 1}
	if hr, ok := h.(headerRanger); ok {
		hr.Range(func(string, string) bool {
			r.count++
			return true
		})
	}
	return r
}

// add reports whether one more field may be added, counting it.
func (r *headerRoom) add() bool {
	if r == nil || r.max <= 0 {
		return true
	}
	if r.count >= r.max {
		r.omitted = true
		return false
	}
	r.count++
	return true
}
