package capture

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// The defaults of the flags (Istio's ports; the proxy's user of the
// sidecar image).
const (
	DefaultProxyUID            = 65532
	DefaultProxyGID            = 65532
	DefaultInboundCapturePort  = 15006
	DefaultOutboundCapturePort = 15001
)

// Config is what the command line asks for.
type Config struct {
	ProxyUID, ProxyGID uint32
	InboundPort        uint16
	OutboundPort       uint16
	// InboundAll captures every inbound port (the "*"), else only
	// InboundPorts; ExcludeInboundPorts are never captured.
	InboundAll          bool
	InboundPorts        []uint16
	ExcludeInboundPorts []uint16
	// OutboundAll captures every outbound destination (the "*"), else
	// only OutboundCIDRs; ExcludeOutboundCIDRs and ExcludeOutboundPorts
	// are never captured.
	OutboundAll          bool
	OutboundCIDRs        []netip.Prefix
	ExcludeOutboundCIDRs []netip.Prefix
	ExcludeOutboundPorts []uint16
	DryRun               bool
	Cleanup              bool
}

// errHelp is returned for --help: the usage is printed and the command
// succeeds.
var errHelp = pflag.ErrHelp

// ParseArgs reads the subcommand's flags (those after "capture"). With
// --help it writes the usage to usage and returns errHelp.
func ParseArgs(args []string, usage io.Writer) (*Config, error) {
	fs := pflag.NewFlagSet("sidecar capture", pflag.ContinueOnError)
	// Errors are the caller's to print, on one line.
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	var (
		c                                    Config
		inPort, outPort                      uint32
		inc, excIn, incCIDR, excCIDR, excOut string
	)
	fs.Uint32Var(&c.ProxyUID, "proxy-uid", DefaultProxyUID, "user id of the proxy, whose own connections are never captured")
	fs.Uint32Var(&c.ProxyGID, "proxy-gid", DefaultProxyGID, "group id of the proxy, whose own connections are never captured")
	fs.Uint32Var(&inPort, "inbound-capture-port", DefaultInboundCapturePort, "port inbound connections are redirected to")
	fs.Uint32Var(&outPort, "outbound-capture-port", DefaultOutboundCapturePort, "port outbound connections are redirected to")
	fs.StringVar(&inc, "include-inbound-ports", "*", `inbound ports to capture: a comma-separated list, "*" for all, "" for none`)
	fs.StringVar(&excIn, "exclude-inbound-ports", "", "inbound ports never captured (comma-separated)")
	fs.StringVar(&incCIDR, "include-outbound-cidrs", "*", `outbound destinations to capture: comma-separated CIDRs, "*" for all, "" for none`)
	fs.StringVar(&excCIDR, "exclude-outbound-cidrs", "", "outbound destinations never captured (comma-separated CIDRs)")
	fs.StringVar(&excOut, "exclude-outbound-ports", "", "outbound destination ports never captured (comma-separated)")
	fs.BoolVar(&c.DryRun, "dry-run", false, "print the rules and change nothing")
	fs.BoolVar(&c.Cleanup, "cleanup", false, "remove the rules")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, errHelp) {
			fmt.Fprintf(usage, "Usage: sidecar capture [flags]\n\nInstalls the transparent-capture rules in the current network namespace.\n\n%s", fs.FlagUsages())
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var errs []error
	var err error
	if c.InboundPort, err = port(inPort); err != nil {
		errs = append(errs, fmt.Errorf("--inbound-capture-port: %w", err))
	}
	if c.OutboundPort, err = port(outPort); err != nil {
		errs = append(errs, fmt.Errorf("--outbound-capture-port: %w", err))
	}
	if strings.TrimSpace(inc) == "*" {
		c.InboundAll = true
	} else if c.InboundPorts, err = portList(inc); err != nil {
		errs = append(errs, fmt.Errorf("--include-inbound-ports: %w", err))
	}
	if c.ExcludeInboundPorts, err = portList(excIn); err != nil {
		errs = append(errs, fmt.Errorf("--exclude-inbound-ports: %w", err))
	}
	if strings.TrimSpace(incCIDR) == "*" {
		c.OutboundAll = true
	} else if c.OutboundCIDRs, err = cidrList(incCIDR); err != nil {
		errs = append(errs, fmt.Errorf("--include-outbound-cidrs: %w", err))
	}
	if c.ExcludeOutboundCIDRs, err = cidrList(excCIDR); err != nil {
		errs = append(errs, fmt.Errorf("--exclude-outbound-cidrs: %w", err))
	}
	if c.ExcludeOutboundPorts, err = portList(excOut); err != nil {
		errs = append(errs, fmt.Errorf("--exclude-outbound-ports: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &c, nil
}

// port checks a capture port.
func port(v uint32) (uint16, error) {
	if v == 0 || v > 65535 {
		return 0, fmt.Errorf("%d is not a port (1 to 65535)", v)
	}
	return uint16(v), nil
}

// portList reads a comma-separated list of ports; "" is none.
func portList(s string) ([]uint16, error) {
	var out []uint16
	for _, f := range fields(s) {
		n, err := strconv.ParseUint(f, 10, 32)
		if err != nil || n == 0 || n > 65535 {
			return nil, fmt.Errorf("%q is not a port (1 to 65535)", f)
		}
		out = append(out, uint16(n))
	}
	return out, nil
}

// cidrList reads a comma-separated list of CIDRs (a bare address is a
// /32 or /128); "" is none.
func cidrList(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range fields(s) {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, fmt.Errorf("%q is not a CIDR (such as 10.0.0.0/8 or fd00::/8)", f)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// fields splits a comma-separated list, dropping spaces and empty items.
func fields(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
