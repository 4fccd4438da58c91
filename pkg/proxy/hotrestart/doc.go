// Package hotrestart is the hot-restart channel between two generations of
// the proxy, as Envoy's: the running process (the parent) listens on a unix
// domain socket named from --socket-path and the base id; a process started
// with --restart-epoch N > 0 (the child) connects to the one of epoch N-1,
// checks the hot-restart version, asks the parent to close its admin
// listener, takes over each listening socket it also binds (the parent
// sends a duplicate of its descriptor with SCM_RIGHTS, so the kernel's
// accept queue is never without an owner), imports the parent's stats,
// tells the parent to stop accepting and drain, and finally to exit.
//
// Messages are JSON documents, one per datagram of a SOCK_SEQPACKET
// socket, so that a descriptor always arrives with the answer it belongs
// to.
package hotrestart
