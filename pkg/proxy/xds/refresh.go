package xds

import (
	"errors"
	"strings"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
)

// refresh reads the file and applies it, counting the outcome as Envoy's
// FilesystemSubscriptionImpl::refresh does: a file that cannot be read or
// decoded is an update_failure; a file that decodes but is refused (an
// unknown field under UnknownReject, or an error from apply) is an
// update_rejected; otherwise update_success, and the version stats follow.
// Refreshes never overlap: Start runs the first before the watch goroutine
// exists, and the goroutine runs the others one after another.
func (s *FileSubscription) refresh() {
	start := s.now()
	s.stats.updateAttempt.Inc()
	u, unknown, err := s.dec.decodeFile(s.path, s.unknownPolicy != UnknownReject)
	if err != nil {
		if rej := (*rejection)(nil); errors.As(err, &rej) {
			s.reject(rej.err)
			return
		}
		s.stats.updateFailure.Inc()
		logging.Warning(s.log, "filesystem config update failure", "path", s.path, "error", oneLine(err))
		return
	}
	s.warnUnknown(unknown)
	if err := s.apply(u); err != nil {
		s.reject(err)
		return
	}
	now := s.now()
	// The version is recorded before update_success counts the update:
	// whoever sees the count (a test, an operator polling the stats) then
	// finds the version in Version() and /config_dump, never the old one.
	s.mu.Lock()
	s.version, s.lastUpdated = u.VersionInfo, now
	s.mu.Unlock()
	s.stats.success(u.VersionInfo, start, now)
}

// reject counts and logs a refused update.
func (s *FileSubscription) reject(err error) {
	s.stats.updateRejected.Inc()
	logging.Warning(s.log, "filesystem config update rejected", "path", s.path, "error", oneLine(err))
}

// warnUnknown applies UnknownWarn to the unknown fields an update had:
// each distinct path is warned about and counted once for the life of the
// subscription, as Envoy warns once per distinct field.
func (s *FileSubscription) warnUnknown(paths []string) {
	if s.unknownPolicy != UnknownWarn {
		return
	}
	for _, p := range paths {
		if s.warned[p] {
			continue
		}
		s.warned[p] = true
		logging.Warning(s.log, "unknown field in dynamic configuration was ignored", "path", s.path, "field", p)
		if s.unknownCounter != nil {
			s.unknownCounter.Inc()
		}
	}
}

// oneLine joins a multi-line (joined) error into one log line.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
