package server

import (
	"errors"
	"fmt"

	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/runtime"
)

// Runtime returns the layered runtime (read access for /runtime).
func (s *Server) Runtime() *runtime.Runtime { return s.runtime }

// ModifyRuntime changes admin-layer overrides and keeps the runtime.* gauges
// current.
func (s *Server) ModifyRuntime(pairs map[string]string) error {
	if err := s.runtime.Modify(pairs); err != nil {
		return err
	}
	s.publishRuntimeStats()
	return nil
}

func (s *Server) publishRuntimeStats() {
	rt := s.stats.Scope("runtime.")
	rt.Gauge("admin_overrides_active").Set(int64(s.runtime.AdminOverrides()))
	rt.Gauge("num_keys").Set(int64(s.runtime.Snapshot().Len()))
	rt.Gauge("num_layers").Set(int64(len(s.runtime.LayerNames())))
}

// Logs returns the application log registry (levels for /logging).
func (s *Server) Logs() *logging.Registry { return s.logs }

// ReopenLogs reopens the application log and every access log, as SIGUSR1
// does. Every file is tried even when one fails.
func (s *Server) ReopenLogs() error {
	var errs []error
	if err := s.logs.Reopen(); err != nil {
		errs = append(errs, fmt.Errorf("reopening the log file: %w", err))
	}
	for _, fw := range s.openAccessLogs() {
		if err := fw.Reopen(); err != nil {
			errs = append(errs, fmt.Errorf("reopening an access log: %w", err))
		}
	}
	if err := s.outlierEvents.Reopen(); err != nil {
		errs = append(errs, fmt.Errorf("reopening the outlier detection event log: %w", err))
	}
	return errors.Join(errs...)
}
