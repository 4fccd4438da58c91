package kubectl

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/outrigger-dev/outrigger/pkg/apis/proxy/v1alpha1"
)

// Transports the --transport flag names, as the controller's.
const (
	transportPortForward = "portforward"
	transportDirect      = "direct"
)

// options are every flag of the plugin; a command declares its own.
type options struct {
	help bool

	// Global flags.
	kubeconfig   string
	context      string
	namespace    string
	transport    string
	adminTimeout time.Duration
	container    string

	// Command flags.
	output        string
	allNamespaces bool
	filter        string
	level         string
	graceful      bool
	inboundOnly   bool
	configID      string
	tapFile       string
	count         int
}

// globalFlags declares the flags every command takes: kubectl's way to
// find the cluster and the namespace, and how admin calls reach a pod.
func (o *options) globalFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&o.context, "context", "", "kubeconfig context to use (default: the current context)")
	fs.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the pod (default: the context's namespace)")
	fs.StringVar(&o.transport, "transport", transportPortForward,
		"how admin calls reach a pod's proxy: portforward (through the API server's pods/portforward, to the pod's loopback) or direct (the pod IP and admin port)")
	fs.DurationVar(&o.adminTimeout, "admin-timeout", 10*time.Second, "time limit of each admin call")
	fs.StringVar(&o.container, "container", v1alpha1.DefaultProxyContainer, "name of the proxy container in the pod")
}

// flagSet declares the global flags and c's own on a new flag set.
func (o *options) flagSet(c command) *pflag.FlagSet {
	fs := pflag.NewFlagSet(c.name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard)
	fs.BoolVarP(&o.help, "help", "h", false, "print this help and exit")
	if c.flags != nil {
		c.flags(fs, o)
	}
	o.globalFlags(fs)
	return fs
}

// globalTakesValue reports whether arg is a global flag whose value is the
// next argument (--namespace foo, -n foo).
func globalTakesValue(arg string) bool {
	var o options
	fs := pflag.NewFlagSet("global", pflag.ContinueOnError)
	o.globalFlags(fs)
	var f *pflag.Flag
	switch {
	case strings.HasPrefix(arg, "--"):
		f = fs.Lookup(arg[2:])
	case len(arg) == 2:
		f = fs.ShorthandLookup(arg[1:])
	}
	return f != nil && f.Value.Type() != "bool"
}

// validate refuses option values no command can run with.
func (o *options) validate() error {
	var errs []error
	if o.transport != transportPortForward && o.transport != transportDirect {
		errs = append(errs, fmt.Errorf("--transport: %q is not %s or %s", o.transport, transportPortForward, transportDirect))
	}
	if o.adminTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--admin-timeout: %s is not positive", o.adminTimeout))
	}
	if strings.TrimSpace(o.container) == "" {
		errs = append(errs, errors.New("--container: empty"))
	}
	return errors.Join(errs...)
}
