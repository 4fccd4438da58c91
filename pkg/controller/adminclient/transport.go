package adminclient

import (
	"context"
	"net/http"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
)

// Endpoint is the admin interface of one pod's proxy.
type Endpoint struct {
	// Namespace and Pod name the pod (the port-forward transport's route).
	Namespace, Pod string
	// UID identifies the pod for logs and errors.
	UID types.UID
	// IP is the pod IP (the direct transport's route).
	IP string
	// Port is the admin port inside the pod.
	Port int32
}

// String names the endpoint in errors: namespace/pod:port.
func (e Endpoint) String() string {
	return e.Namespace + "/" + e.Pod + ":" + strconv.Itoa(int(e.Port))
}

// Transport opens connections to a pod's admin interface. It is the
// AdminTransport of the design: the admin client's calls do not know how
// the bytes get to the pod.
type Transport interface {
	// Open returns a connection to e's admin interface; ctx bounds the
	// opening only. The connection carries requests until it is closed.
	Open(ctx context.Context, e Endpoint) (Conn, error)
}

// Conn carries HTTP requests to one pod's admin interface.
type Conn interface {
	http.RoundTripper
	// Close releases the connection and everything it holds.
	Close() error
}
