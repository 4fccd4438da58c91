package logging

import (
	"fmt"
	"slices"
)

// Level is a log severity, ordered from the most verbose (trace) to off.
type Level int8

// The levels, in Envoy's (spdlog's) order. Off disables a logger.
const (
	LevelTrace Level = iota
	LevelDebug
	LevelInfo
	LevelWarning
	LevelError
	LevelCritical
	LevelOff
)

// levelNames is indexed by Level; it is never written.
var levelNames = [...]string{"trace", "debug", "info", "warning", "error", "critical", "off"}

// String returns the level's canonical name ("warning", never "warn").
func (l Level) String() string {
	if l < LevelTrace || l > LevelOff {
		return fmt.Sprintf("level(%d)", int8(l))
	}
	return levelNames[l]
}

// Short returns the one-letter form used by the %L format flag.
func (l Level) Short() string {
	switch l {
	case LevelTrace:
		return "T"
	case LevelDebug:
		return "D"
	case LevelInfo:
		return "I"
	case LevelWarning:
		return "W"
	case LevelError:
		return "E"
	case LevelCritical:
		return "C"
	default:
		return "O"
	}
}

// LevelNames lists the canonical level names in order.
func LevelNames() []string { return slices.Clone(levelNames[:]) }

// ParseLevel accepts only the canonical names. The admin endpoint /logging
// uses it: Envoy refuses "warn" there.
func ParseLevel(s string) (Level, error) {
	for i, n := range levelNames {
		if n == s {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("unknown logger level %q", s)
}

// ParseCLILevel accepts the canonical names and also "warn", as the command
// line does.
func ParseCLILevel(s string) (Level, error) {
	if s == "warn" {
		return LevelWarning, nil
	}
	return ParseLevel(s)
}

// valid reports whether l is one of the named levels.
func (l Level) valid() bool { return l >= LevelTrace && l <= LevelOff }

// vLevel maps a logr verbosity to a level: V(0) is info, V(1) debug and
// anything more verbose is trace.
func vLevel(v int) Level {
	switch {
	case v <= 0:
		return LevelInfo
	case v == 1:
		return LevelDebug
	default:
		return LevelTrace
	}
}
