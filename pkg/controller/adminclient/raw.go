package adminclient

import (
	"context"
	"net/http"
	"net/url"
)

// maxRawBody bounds the answers of Get and Post, which include whole
// configuration dumps and stats listings: far more than the controller's
// typed calls read, still bounded.
const maxRawBody = 64 << 20

// Get makes a GET call on any admin path and returns the body of a 200
// answer (another answer is a *StatusError). It serves callers that show
// admin answers to people, such as the kubectl plugin.
func (s *Session) Get(ctx context.Context, path string, query url.Values) ([]byte, error) {
	return s.doLimit(ctx, http.MethodGet, path, query, maxRawBody)
}

// Post makes a POST call on any admin path, as Get does for GET.
func (s *Session) Post(ctx context.Context, path string, query url.Values) ([]byte, error) {
	return s.doLimit(ctx, http.MethodPost, path, query, maxRawBody)
}
