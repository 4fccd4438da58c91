package server

import "runtime/debug"

// releaseStartupMemory gives back, once the server serves, the memory that
// only its start-up needed: the garbage of loading and building the
// configuration, which a forced collection frees and returns to the system
// at once (the background scavenger would keep most of it for minutes), and
// the pages of the executable that only package initialisation touched
// (every package's init code and data, the protobuf descriptors of every
// Envoy API the binary knows), which stay mapped in the process otherwise;
// see dropExecutablePages. It runs once: one collection and one pass over
// /proc/self/smaps, nothing on the request path. The pages the data plane
// uses come back on their first use, from the page cache.
func (s *Server) releaseStartupMemory() {
	debug.FreeOSMemory()
	n, err := dropExecutablePages()
	if err != nil {
		s.log.V(1).Info("could not release the executable's start-up pages", "error", err.Error())
		return
	}
	s.log.V(1).Info("released start-up memory", "executableBytes", n)
}
