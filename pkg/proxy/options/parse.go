package options

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// Parse reads the command line (args excludes the program name), fills in
// the defaults and validates every value. env supplies the machine's CPU
// counts for --concurrency's default.
//
// The returned error is a single line without an "error: " prefix; the
// caller prints "error: <err>" and exits 1. --help and --version skip all
// validation beyond the option syntax, and only ActionRun requires a
// configuration.
func Parse(args []string, env Environment) (*Options, error) {
	raw := defaultRawOptions()
	fs := newFlagSet(&raw)
	if err := rejectGoTestShorthands(fs, args); err != nil {
		return nil, err
	}

	given := make(map[string]bool)
	err := fs.ParseAll(splitSpaced(fs, args), func(f *pflag.Flag, value string) error {
		// pflag lets the last occurrence win silently; Envoy refuses a
		// repeated option, and so do we, because which one the user meant
		// is a guess.
		if _, repeatable := f.Value.(listValue); given[f.Name] && !repeatable {
			return fmt.Errorf("option --%s given more than once", f.Name)
		}
		given[f.Name] = true
		return fs.Set(f.Name, value)
	})
	if err != nil {
		return nil, translateParseError(err)
	}

	var ignored int
	if positional := fs.Args(); len(positional) > 0 {
		// Arguments after "--" are ignored, as Envoy's parser does; any other
		// argument is a mistake (often a switch given a value: --flag false).
		before := fs.ArgsLenAtDash()
		if before < 0 {
			before = len(positional)
		}
		if before > 0 {
			return nil, fmt.Errorf("unexpected argument %s", quote(positional[0]))
		}
		ignored = len(positional)
	}

	switch {
	case raw.help:
		return &Options{Action: ActionHelp}, nil
	case raw.version:
		return &Options{Action: ActionVersion}, nil
	}

	o, err := build(&raw, given, env)
	if err != nil {
		return nil, err
	}
	if ignored > 0 {
		o.Warnings = append(o.Warnings, fmt.Sprintf("ignoring %d argument(s) after --", ignored))
	}
	return o, nil
}

// splitSpaced reads an option and its value given as one argument with
// a space between them ("--service-cluster projectcontour", as manifests
// without a shell pass "--service-cluster $(NS)"), as Envoy's parser
// (TCLAP) splits an argument at its first space: it becomes
// "--service-cluster=projectcontour". Only options that take a value are
// split, and never the value of the option before (which may hold
// spaces); args itself is left alone.
func splitSpaced(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	takesValue := func(f *pflag.Flag) bool { return f != nil && f.NoOptDefVal == "" }
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return append(out, args[i:]...)
		}
		var f *pflag.Flag
		switch {
		case strings.HasPrefix(arg, "--"):
			name, _, _ := strings.Cut(arg[2:], "=")
			name, _, _ = strings.Cut(name, " ")
			f = fs.Lookup(name)
		case len(arg) > 1 && arg[0] == '-':
			f = fs.ShorthandLookup(arg[1:2])
		default:
			out = append(out, arg)
			continue
		}
		if flag, value, ok := strings.Cut(arg, " "); ok && takesValue(f) && !strings.Contains(flag, "=") &&
			(flag == "--"+f.Name || flag == "-"+f.Shorthand) {
			out = append(out, flag+"="+value)
			continue
		}
		out = append(out, arg)
		if takesValue(f) && !strings.Contains(arg, "=") && (arg == "--"+f.Name || arg == "-"+f.Shorthand) && i+1 < len(args) {
			// The next argument is this option's value, whatever it holds.
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// rejectGoTestShorthands refuses arguments like -test.v. pflag skips a
// shorthand group that starts with "test." without a word, to coexist with
// `go test` flags; the proxy has no such options, so a user who typed one
// deserves an error. The walk mirrors pflag's: it only looks at arguments in
// option position, skipping the values of options that take one.
func rejectGoTestShorthands(fs *pflag.FlagSet, args []string) error {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			return nil
		case len(arg) < 2 || arg[0] != '-':
			continue
		case arg[1] == '-':
			name, _, inline := strings.Cut(arg[2:], "=")
			if f := fs.Lookup(name); f != nil && f.NoOptDefVal == "" && !inline {
				i++ // the next argument is this option's value
			}
			continue
		}
		for group := arg[1:]; group != ""; {
			if strings.HasPrefix(group, "test.") {
				return fmt.Errorf("unknown option %s", quote(arg))
			}
			f := fs.ShorthandLookup(group[:1])
			if f == nil {
				break // pflag reports the unknown shorthand
			}
			if f.NoOptDefVal != "" {
				group = group[1:]
				continue
			}
			if len(group) == 1 {
				i++ // -l debug: the next argument is the value
			}
			break
		}
	}
	return nil
}
