package admin

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
)

// Answers of the profilers, worded as Envoy's (gperftools references left
// out: the profiles are Go pprof files, read with `go tool pprof`).
const (
	profilerUsage       = "?enable=<y|n>\n"
	cpuStartFailed      = "failure to start the profiler"
	heapStarted         = "Starting heap profiler"
	heapAlreadyStarted  = "Fail to start heap profiler: already started"
	heapNotStarted      = "Fail to stop heap profiler: not started"
	heapStartFailed     = "Fail to start the heap profiler"
	heapStoppedFormat   = "Heap profiler stopped and data written to %s."
	profilerEnableParam = "enable"
	profilerEnableOn    = "y"
	profilerEnableOff   = "n"
)

var (
	errHeapAlreadyStarted = errors.New(heapAlreadyStarted)
	errHeapNotStarted     = errors.New(heapNotStarted)
)

// profilers is the state of /cpuprofiler and /heapprofiler. The runtime has
// one CPU profile and one memory-profiling rate per process, so the state is
// guarded as a whole.
type profilers struct {
	mu       sync.Mutex
	cpuFile  *os.File // open while the CPU profiler runs
	heapFile *os.File // open while the heap profiler records
	heapRate int      // runtime.MemProfileRate before the heap profiler started
}

// profilerRoutes serves /cpuprofiler and /heapprofiler.
func (a *Admin) profilerRoutes() []Route {
	enable := func(what string) []Param {
		return []Param{{
			Name:   profilerEnableParam,
			Help:   "enables the " + what + " profiler",
			Kind:   ParamEnum,
			Values: []string{profilerEnableOn, profilerEnableOff},
		}}
	}
	return []Route{
		{
			Path:    "/cpuprofiler",
			Help:    "enable/disable the CPU profiler",
			Params:  enable("CPU"),
			Mutates: true,
			Handler: a.handleCPUProfiler,
		},
		{
			Path:    "/heapprofiler",
			Help:    "enable/disable the heap profiler",
			Params:  enable("heap"),
			Mutates: true,
			Handler: a.handleHeapProfiler,
		},
	}
}

// profilerSwitch reads the profilers' only parameter. Like Envoy, any other
// parameter next to it makes the request invalid.
func profilerSwitch(p Params) (enable, ok bool) {
	if p.Len() != 1 {
		return false, false
	}
	switch p.Get(profilerEnableParam) {
	case profilerEnableOn:
		return true, true
	case profilerEnableOff:
		return false, true
	default:
		return false, false
	}
}

// handleCPUProfiler starts (enable=y) or stops (enable=n) a pprof CPU profile
// written to the profile path. Stopping a profiler that does not run is not
// an error.
func (a *Admin) handleCPUProfiler(w *Response, r *Request) {
	enable, ok := profilerSwitch(r.Params)
	if !ok {
		w.Text(http.StatusBadRequest, profilerUsage)
		return
	}
	if enable {
		if err := a.profilers.startCPU(a.profilePath); err != nil {
			a.log.Error(err, "cannot start the CPU profiler", "path", a.profilePath)
			w.Text(http.StatusInternalServerError, cpuStartFailed)
			return
		}
	} else if err := a.profilers.stopCPU(); err != nil {
		w.Fail(err)
		return
	}
	w.Text(http.StatusOK, "OK\n")
}

// startCPU starts the CPU profile into path. It fails when the profiler
// already runs (from here or elsewhere in the process) or path cannot be
// created; a running profile's file is never truncated.
func (p *profilers) startCPU(path string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cpuFile != nil {
		return errors.New("the CPU profiler is already running")
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return errors.Join(fmt.Errorf("start CPU profile: %w", err), f.Close())
	}
	p.cpuFile = f
	return nil
}

// stopCPU stops the CPU profile, if any, and closes its file.
func (p *profilers) stopCPU() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cpuFile == nil {
		return nil
	}
	pprof.StopCPUProfile()
	f := p.cpuFile
	p.cpuFile = nil
	if err := f.Close(); err != nil {
		return fmt.Errorf("close CPU profile %s: %w", f.Name(), err)
	}
	return nil
}

// handleHeapProfiler starts recording every allocation (enable=y) or writes
// the pprof heap profile to the profile path and stops (enable=n).
func (a *Admin) handleHeapProfiler(w *Response, r *Request) {
	enable, ok := profilerSwitch(r.Params)
	if !ok {
		w.Text(http.StatusBadRequest, profilerUsage)
		return
	}
	if enable {
		err := a.profilers.startHeap(a.profilePath)
		switch {
		case errors.Is(err, errHeapAlreadyStarted):
			w.Text(http.StatusBadRequest, heapAlreadyStarted)
		case err != nil:
			a.log.Error(err, "cannot start the heap profiler", "path", a.profilePath)
			w.Text(http.StatusInternalServerError, heapStartFailed)
		default:
			w.Text(http.StatusOK, heapStarted)
		}
		return
	}
	err := a.profilers.stopHeap()
	switch {
	case errors.Is(err, errHeapNotStarted):
		w.Text(http.StatusBadRequest, heapNotStarted)
	case err != nil:
		w.Fail(err)
	default:
		w.Text(http.StatusOK, fmt.Sprintf(heapStoppedFormat, a.profilePath))
	}
}

// startHeap opens the profile file now, so that an unwritable path is
// reported when profiling starts rather than after it, and samples every
// allocation from then on.
func (p *profilers) startHeap(path string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.heapFile != nil {
		return errHeapAlreadyStarted
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create heap profile: %w", err)
	}
	p.heapFile = f
	p.heapRate = runtime.MemProfileRate
	runtime.MemProfileRate = 1
	return nil
}

// stopHeap writes the heap profile, closes its file and restores the
// sampling rate. The profiler is stopped even when writing fails, so that
// full sampling never outlives the request that ended it.
func (p *profilers) stopHeap() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.heapFile == nil {
		return errHeapNotStarted
	}
	f := p.heapFile
	p.heapFile = nil
	defer func() { runtime.MemProfileRate = p.heapRate }()

	runtime.GC() // the heap profile reports the state as of the last GC
	werr := pprof.WriteHeapProfile(f)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("write heap profile %s: %w", f.Name(), err)
	}
	return nil
}
