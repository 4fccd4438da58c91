// Package epoll is an epoll set that Go's netpoller waits on: the
// goroutine that owns the set sleeps in the netpoller until the set is
// readable (one of its descriptors is ready), then takes the ready list
// with a non-blocking epoll_pwait, without holding a thread while it
// waits. The tcp_proxy event loop and the HTTP connection manager's idle
// connections use it (Linux only).
package epoll
