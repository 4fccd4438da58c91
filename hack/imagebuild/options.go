package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/yaml"
)

// chartFile holds the chart's appVersion, the default tag: a `make push`
// with defaults pushes what `helm install` pulls.
const chartFile = "charts/outrigger/Chart.yaml"

// defaultCACerts is where Debian (and most distributions) keep the CA
// bundle; Go's crypto/x509 reads the same path in the image.
const defaultCACerts = "/etc/ssl/certs/ca-certificates.crt"

// options is the parsed command line.
type options struct {
	out        string
	tag        string
	platforms  []v1.Platform
	components []component
	caCerts    string
	// created is the Unix time of -source-date-epoch or SOURCE_DATE_EPOCH;
	// nil means the commit time of the built source.
	created  *int64
	registry string
	insecure bool
}

// parseFlags parses the flags of cmd (build or push).
func parseFlags(cmd string, args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("imagebuild "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	var o options
	var platforms, components, epoch string
	fs.StringVar(&o.out, "out", "bin/images", "")
	fs.StringVar(&o.tag, "tag", "", "")
	fs.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "")
	fs.StringVar(&components, "components", "sidecar,controller", "")
	fs.StringVar(&o.caCerts, "ca-certs", defaultCACerts, "")
	fs.StringVar(&epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "")
	fs.StringVar(&o.registry, "registry", "", "")
	fs.BoolVar(&o.insecure, "insecure", false, "")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if cmd == "build" && (o.registry != "" || o.insecure) {
		return o, fmt.Errorf("%w: -registry and -insecure are push flags", errUsage)
	}
	var err error
	if o.platforms, err = parsePlatforms(platforms); err != nil {
		return o, err
	}
	if o.components, err = parseComponents(components); err != nil {
		return o, err
	}
	if epoch != "" {
		n, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil || n < 0 {
			return o, fmt.Errorf("source date epoch %q: want Unix seconds (an integer >= 0)", epoch)
		}
		o.created = &n
	}
	if o.tag == "" {
		if o.tag, err = chartAppVersion(); err != nil {
			return o, err
		}
	}
	if _, err := name.NewTag("example.invalid/x:"+o.tag, name.StrictValidation); err != nil {
		return o, fmt.Errorf("tag %q: %v", o.tag, err)
	}
	return o, nil
}

// checkPush reports what push misses before anything is built.
func (o options) checkPush() error {
	if o.registry == "" {
		return errors.New("no registry to push to: set REGISTRY (make push REGISTRY=ghcr.io/you [TAG=v1] [INSECURE=1]) or pass -registry")
	}
	for _, c := range o.components {
		if _, err := o.reference(c); err != nil {
			return err
		}
	}
	return nil
}

// reference is the name component c is pushed as: <registry>/<name>:<tag>.
func (o options) reference(c component) (name.Tag, error) {
	var opts []name.Option
	if o.insecure {
		opts = append(opts, name.Insecure)
	}
	s := strings.TrimSuffix(o.registry, "/") + "/" + c.name + ":" + o.tag
	t, err := name.NewTag(s, append(opts, name.StrictValidation)...)
	if err != nil {
		return name.Tag{}, fmt.Errorf("registry %q gives the bad reference %q: %v", o.registry, s, err)
	}
	return t, nil
}

// parsePlatforms parses "os/arch,os/arch"; only linux is supported, the
// binaries' and the images' only target.
func parsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	seen := map[string]bool{}
	for _, f := range splitList(s) {
		p, err := v1.ParsePlatform(f)
		if err != nil {
			return nil, fmt.Errorf("platform %q: %v", f, err)
		}
		if p.OS != "linux" || p.Variant != "" || p.OSVersion != "" || (p.Architecture != "amd64" && p.Architecture != "arm64") {
			return nil, fmt.Errorf("platform %q: supported are linux/amd64 and linux/arm64", f)
		}
		if seen[p.String()] {
			return nil, fmt.Errorf("platform %q given twice", f)
		}
		seen[p.String()] = true
		out = append(out, *p)
	}
	if len(out) == 0 {
		return nil, errors.New("no platform given")
	}
	return out, nil
}

// parseComponents parses "sidecar,controller" into known components.
func parseComponents(s string) ([]component, error) {
	var out []component
	seen := map[string]bool{}
	for _, f := range splitList(s) {
		c, ok := findComponent(f)
		if !ok {
			return nil, fmt.Errorf("component %q: known are sidecar and controller", f)
		}
		if seen[f] {
			return nil, fmt.Errorf("component %q given twice", f)
		}
		seen[f] = true
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no component given")
	}
	return out, nil
}

// chartAppVersion reads appVersion from the chart.
func chartAppVersion() (string, error) {
	raw, err := os.ReadFile(filepath.FromSlash(chartFile))
	if err != nil {
		return "", fmt.Errorf("default tag: %v (run from the repository root, or pass -tag)", err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(raw, &chart); err != nil {
		return "", fmt.Errorf("default tag: %s: %v", chartFile, err)
	}
	if chart.AppVersion == "" {
		return "", fmt.Errorf("default tag: %s has no appVersion; pass -tag", chartFile)
	}
	return chart.AppVersion, nil
}
