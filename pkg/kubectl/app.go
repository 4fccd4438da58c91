package kubectl

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// command is one subcommand of the plugin.
type command struct {
	// name is the word that selects it.
	name string
	// usage is its synopsis after the name, summary one line about it.
	usage, summary string
	// flags declares the command's own flags on fs.
	flags func(fs *pflag.FlagSet, o *options)
	// needsCluster is set for commands that talk to the API server.
	needsCluster bool
	// run carries the command out with its positional arguments.
	run func(ctx context.Context, a *app, args []string) error
}

// commands lists the subcommands in help order.
func commands() []command {
	return []command{
		proxyConfigCommand(),
		statsCommand(),
		logCommand(),
		drainCommand(),
		runtimeCommand(),
		tapCommand(),
		statusCommand(),
		versionCommand(),
	}
}

// app is one run of the plugin: its output, options and clients.
type app struct {
	stdout, stderr io.Writer
	now            func() time.Time
	opts           options
	kube           *kube
}

// Run runs the plugin with args (without the program name) and returns the
// process's exit code: 0 on success, 1 on an error (printed on stderr), as
// kubectl's.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr, now: time.Now}
	if err := a.run(ctx, args); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}

// usagef is the error of a command line the plugin does not understand.
func usagef(format string, args ...any) error {
	return fmt.Errorf(format, args...)
}

// run finds the command, parses its flags and runs it.
func (a *app) run(ctx context.Context, args []string) error {
	name, rest := splitCommand(args)
	if name == "" || name == "help" {
		if name == "" && !helpAsked(rest) {
			a.printUsage(a.stderr)
			return usagef("no command given")
		}
		a.printUsage(a.stdout)
		return nil
	}
	cmd, ok := findCommand(name)
	if !ok {
		return usagef("unknown command %q; valid commands: %s", name, strings.Join(commandNames(), ", "))
	}
	fs := a.opts.flagSet(cmd)
	if err := fs.Parse(rest); err != nil {
		return usagef("%s: %v", cmd.name, err)
	}
	if a.opts.help {
		a.printCommandUsage(cmd, fs)
		return nil
	}
	if err := a.opts.validate(); err != nil {
		return usagef("%s: %v", cmd.name, err)
	}
	if cmd.needsCluster {
		k, err := newKube(a.opts)
		if err != nil {
			return err
		}
		a.kube = k
	}
	return cmd.run(ctx, a, fs.Args())
}

// splitCommand takes the command word out of args: the first argument that
// is neither a flag nor a global flag's value.
func splitCommand(args []string) (string, []string) {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return "", args
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			rest := append(append([]string{}, args[:i]...), args[i+1:]...)
			return arg, rest
		}
		if !strings.Contains(arg, "=") && globalTakesValue(arg) {
			i++
		}
	}
	return "", args
}

// helpAsked reports whether -h or --help is among args.
func helpAsked(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "--help" {
			return true
		}
	}
	return false
}

// findCommand looks a command up by name.
func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// commandNames lists the commands' names, sorted.
func commandNames() []string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	sort.Strings(names)
	return names
}

// printUsage prints the list of commands and the global flags.
func (a *app) printUsage(w io.Writer) {
	fmt.Fprintln(w, "kubectl outrigger: inspect and change the Outrigger proxies of pods.")
	fmt.Fprintln(w, "\nUsage: kubectl outrigger COMMAND [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-13s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nGlobal flags:")
	var o options
	fs := pflag.NewFlagSet("global", pflag.ContinueOnError)
	o.globalFlags(fs)
	fmt.Fprint(w, fs.FlagUsages())
	fmt.Fprintln(w, "\nRun 'kubectl outrigger COMMAND --help' for a command's flags.")
}

// printCommandUsage prints one command's synopsis and flags.
func (a *app) printCommandUsage(c command, fs *pflag.FlagSet) {
	fmt.Fprintf(a.stdout, "%s\n\nUsage: kubectl outrigger %s %s\n\nFlags:\n%s", c.summary, c.name, c.usage, fs.FlagUsages())
}
