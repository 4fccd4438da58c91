// Package userspace is the in-memory connection of Envoy's internal
// listeners (its io_socket/user_space extension): a pair of net.Conns
// joined by two bounded buffers, one each way, with no socket and no file
// descriptor. A writer blocks while the buffer towards its peer is full
// (flow control), CloseWrite delivers end of stream after the data already
// written (half-close), Close ends both directions, and deadlines work as
// on a socket.
package userspace
