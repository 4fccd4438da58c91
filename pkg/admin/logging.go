package admin

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// levelNames are the level names /logging accepts, in spdlog's order. Unlike
// the command line, "warn" is refused, as in Envoy.
var levelNames = []string{"trace", "debug", "info", "warning", "error", "critical", "off"}

// Errors of /logging, worded as Envoy's.
var (
	errUnknownLevel      = errors.New("unknown logger level")
	errUnknownLogger     = errors.New("unknown logger name")
	errLoggingParamCount = errors.New("invalid number of parameters")
	errEmptyLoggerPair   = errors.New("empty logger name or empty logger level")
)

// loggingUsage follows the "error: ..." line of a refused /logging request.
// The paths line keeps Envoy's wording; "=" is accepted in place of ":".
const loggingUsage = "usage: /logging?<name>=<level> (change single level)\n" +
	"usage: /logging?paths=name1:level1,name2:level2,... (change multiple levels)\n" +
	"usage: /logging?level=<level> (change all levels)\n"

// loggingRoutes serves the application log: /logging and /reopen_logs.
func (a *Admin) loggingRoutes() []Route {
	if a.opts.Logs == nil {
		return nil
	}
	return []Route{
		{
			Path: "/logging",
			Help: "query/change logging levels",
			Params: []Param{
				{
					Name: "paths",
					Help: "Change multiple logging levels by setting to " +
						"<logger_name1>:<desired_level1>,<logger_name2>:<desired_level2> " +
						"(\"=\" may replace \":\"). If fine grain logging is enabled, use __FILE__ " +
						"or a glob expression as the logger name. For example, pkg/proxy/server/*:warning",
					Kind: ParamString,
				},
				{
					Name:   "level",
					Help:   "desired logging level, this will change all loggers's level",
					Kind:   ParamEnum,
					Values: append([]string{""}, levelNames...),
				},
			},
			Mutates: true,
			Handler: a.handleLogging,
		},
		{
			Path:    "/reopen_logs",
			Help:    "reopen access logs",
			Mutates: true,
			Handler: a.handleReopenLogs,
		},
	}
}

// handleLogging changes log levels as asked, then lists every logger. A bad
// request changes nothing: it is validated in full first, and answered 400
// with the error, the usage and the unchanged list.
func (a *Admin) handleLogging(w *Response, r *Request) {
	logs := a.opts.Logs
	err := a.changeLogLevels(r.Params)

	var b strings.Builder
	code := http.StatusOK
	if err != nil {
		code = http.StatusBadRequest
		fmt.Fprintf(&b, "error: %v\n\n%slevels: ", err, loggingUsage)
		for _, l := range levelNames {
			b.WriteString(l)
			b.WriteByte(' ') // Envoy leaves a trailing space
		}
		b.WriteByte('\n')
	}
	b.WriteString("active loggers:\n")
	for _, l := range logs.Loggers() {
		fmt.Fprintf(&b, "  %s: %s\n", l.Name, l.Level)
	}
	b.WriteByte('\n')
	w.Text(code, b.String())
}

// changeLogLevels validates and applies one /logging request.
func (a *Admin) changeLogLevels(p Params) error {
	logs := a.opts.Logs
	change, err := parseLogChange(p, logs.Loggers(), logs.FineGrain())
	switch {
	case err != nil:
		return err
	case change.all != "":
		return logs.SetAllLevels(change.all)
	case len(change.levels) > 0:
		return logs.SetLevels(change.levels)
	default:
		return nil
	}
}

// logChange is a validated /logging request: every logger to one level
// (all), or some loggers to their levels.
type logChange struct {
	all    string
	levels map[string]string
}

// parseLogChange reads the three forms of /logging — level=<level>,
// paths=<name>:<level>,..., and <name>=<level> — and checks every level
// name, and every logger name unless fine-grain logging (where names are
// file globs) is on. Empty level and paths were dropped by the dispatcher,
// so more than one remaining parameter is ambiguous.
func parseLogChange(p Params, loggers []LoggerLevel, fineGrain bool) (logChange, error) {
	switch {
	case p.Len() == 0:
		return logChange{}, nil
	case p.Len() > 1:
		return logChange{}, errLoggingParamCount
	}
	if level, ok := p.Lookup("level"); ok {
		if !slices.Contains(levelNames, level) {
			return logChange{}, errUnknownLevel
		}
		return logChange{all: level}, nil
	}

	var levels map[string]string
	if paths, ok := p.Lookup("paths"); ok {
		var err error
		if levels, err = parseLoggerPaths(paths); err != nil {
			return logChange{}, err
		}
	} else {
		name := p.Names()[0]
		level := p.Get(name)
		if !slices.Contains(levelNames, level) {
			return logChange{}, errUnknownLevel
		}
		levels = map[string]string{name: level}
	}
	if !fineGrain {
		for name := range levels {
			if !slices.ContainsFunc(loggers, func(l LoggerLevel) bool { return l.Name == name }) {
				return logChange{}, errUnknownLogger
			}
		}
	}
	return logChange{levels: levels}, nil
}

// parseLoggerPaths reads the paths parameter: comma-separated
// <name>:<level> items, or <name>=<level> like the single-logger form.
// Blank items are skipped and spaces around names and levels trimmed; a
// later item for the same name wins.
func parseLoggerPaths(paths string) (map[string]string, error) {
	levels := make(map[string]string)
	for item := range strings.SplitSeq(paths, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		name, level := item, ""
		if i := strings.IndexAny(item, ":="); i >= 0 {
			name, level = item[:i], item[i+1:]
		}
		name, level = strings.TrimSpace(name), strings.TrimSpace(level)
		if name == "" || level == "" {
			return nil, errEmptyLoggerPair
		}
		if !slices.Contains(levelNames, level) {
			return nil, errUnknownLevel
		}
		levels[name] = level
	}
	return levels, nil
}

// handleReopenLogs reopens the log files, as SIGUSR1 does.
func (a *Admin) handleReopenLogs(w *Response, _ *Request) {
	if err := a.opts.Logs.ReopenLogs(); err != nil {
		w.Fail(fmt.Errorf("reopen logs: %w", err))
		return
	}
	w.Text(http.StatusOK, "OK\n")
}
