package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// minimalYAML is the smallest valid bootstrap, given inline with --config-yaml.
const minimalYAML = `admin: {address: {socket_address: {address: 127.0.0.1, port_value: 0}}}`

// versionPattern is the --version line (docs/compat.md): revision, release,
// tree state, build mode and TLS library.
var versionPattern = regexp.MustCompile(
	`^[0-9a-f]{40}/[0-9]+\.[0-9]+\.[0-9]+(-dev)?/(Clean|Modified)/(RELEASE|DEBUG)/GoTLS(-FIPS)?$`)

var _ = Describe("Command line", func() {
	Describe("--version", func() {
		It("prints the build version on stdout and exits 0", func() {
			r := Run("--version")
			Expect(r.ExitCode).To(Equal(0), "stderr: %s", r.Stderr)
			Expect(r.Stdout).To(HavePrefix("\noutrigger  version: "))
			Expect(r.Stdout).To(HaveSuffix("\n\n"))
			version := strings.TrimSuffix(strings.TrimPrefix(r.Stdout, "\noutrigger  version: "), "\n\n")
			Expect(version).To(MatchRegexp(versionPattern.String()))
		})
	})

	Describe("--hot-restart-version", func() {
		DescribeTable("prints the version on stderr without a newline and exits 0",
			func(args []string, want string) {
				r := Run(append([]string{"--hot-restart-version"}, args...)...)
				Expect(r.ExitCode).To(Equal(0), "stderr: %s", r.Stderr)
				Expect(r.Stderr).To(Equal(want))
				Expect(r.Stdout).To(BeEmpty())
			},
			Entry("defaults", nil, "1.60.16384"),
			Entry("hot restart disabled", []string{"--disable-hot-restart"}, "disabled"),
			Entry("older build's sizing options", []string{"--max-obj-name-len", "100", "--max-stats", "2000"}, "1.100.2000"),
		)
	})

	Describe("--help", func() {
		// Every option of the spec's table, both builds, plus Envoy's newer
		// options that CommandLineOptions carries.
		options := []string{
			"config-path", "config-yaml", "bootstrap-version", "v2-config-only", "mode",
			"admin-address-path", "local-address-ip-version", "base-id", "use-dynamic-base-id",
			"base-id-path", "concurrency", "log-level", "component-log-level", "cpuset-threads",
			"log-path", "log-format", "log-format-escaped", "restart-epoch",
			"enable-fine-grain-logging", "socket-path", "socket-mode", "hot-restart-version",
			"service-cluster", "service-node", "service-zone", "file-flush-interval-msec",
			"file-flush-min-size-kb", "drain-time-s", "drain-strategy", "parent-shutdown-time-s",
			"max-obj-name-len", "max-stats", "disable-hot-restart", "enable-mutex-tracing",
			"allow-unknown-fields", "allow-unknown-static-fields", "reject-unknown-dynamic-fields",
			"ignore-unknown-dynamic-fields", "disable-extensions", "version", "enable-core-dump",
			"stats-tag", "skip-hot-restart-on-no-parent", "skip-hot-restart-parent-stats",
			"skip-deprecated-logs", "log-stacktrace-single-entry", "help",
		}
		for _, flag := range []string{"-h", "--help"} {
			It(fmt.Sprintf("%s lists every option on stdout and exits 0", flag), func() {
				r := Run(flag)
				Expect(r.ExitCode).To(Equal(0), "stderr: %s", r.Stderr)
				for _, o := range options {
					Expect(r.Stdout).To(MatchRegexp(`--%s([^-\w]|$)`, regexp.QuoteMeta(o)), "option --%s is not listed", o)
				}
				Expect(r.Stdout).To(MatchRegexp(`-c, --config-path`))
				Expect(r.Stdout).To(MatchRegexp(`-l, --log-level`))
				Expect(r.Stdout).To(MatchRegexp(`-h, --help`))
			})
		}
	})

	Describe("errors", func() {
		// withBase runs each case in validate mode with a valid inline
		// bootstrap, so a command line that is wrongly accepted exits 0 at
		// once (and fails the spec) instead of serving. An option may be
		// given only once, so a case about --mode brings its own.
		withBase := func(args []string) []string {
			base := []string{"--config-yaml", minimalYAML}
			if !slices.Contains(args, "--mode") {
				base = append(base, "--mode", "validate")
			}
			return append(base, args...)
		}

		DescribeTable("print one line `error: <reason>` on stderr and exit 1",
			func(args []string, want string) {
				r := Run(withBase(args)...)
				Expect(r.ExitCode).To(Equal(1), "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
				Expect(r.Stderr).To(Equal("error: " + want + "\n"))
				Expect(r.Stdout).To(BeEmpty())
			},
			Entry("unknown mode", []string{"--mode", "bogus"}, "unknown mode 'bogus'"),
			Entry("unknown IP version", []string{"--local-address-ip-version", "v5"}, "unknown IP address version 'v5'"),
			Entry("unknown log level", []string{"-l", "verbose"}, "invalid log level specified 'verbose'"),
			Entry("component level without a level", []string{"--component-log-level", "upstream"},
				"component log level not correctly specified 'upstream'"),
			Entry("component level with a bad level", []string{"--component-log-level", "upstream:loud"},
				"invalid log level specified 'loud'"),
			Entry("unknown component", []string{"--component-log-level", "nosuch:debug"},
				"invalid component specified 'nosuch'"),
			Entry("component levels with fine-grain logging",
				[]string{"--component-log-level", "upstream:debug", "--enable-fine-grain-logging"},
				"--component-log-level will not work with --enable-fine-grain-logging"),
			Entry("unknown drain strategy", []string{"--drain-strategy", "slowly"}, "unknown drain-strategy 'slowly'"),
			Entry("non-octal socket mode", []string{"--socket-path", "/nonexistent/outrigger-e2e.sock", "--socket-mode", "999"},
				"invalid socket-mode '999'"),
			Entry("socket mode without a socket path", []string{"--socket-mode", "644"},
				"--socket-mode is not allowed with an abstract (@) or unset --socket-path"),
			Entry("socket mode with an abstract socket path", []string{"--socket-path", "@e2e", "--socket-mode", "644"},
				"--socket-mode is not allowed with an abstract (@) or unset --socket-path"),
			Entry("dynamic base id with a restart epoch", []string{"--use-dynamic-base-id", "--restart-epoch", "2"},
				"cannot use --restart-epoch=2 with --use-dynamic-base-id"),
			Entry("object names too short", []string{"--max-obj-name-len", "59"}, "--max-obj-name-len must be at least 60"),
			Entry("too many stats", []string{"--max-stats", "100000001"}, "--max-stats must not exceed 100000000"),
			Entry("misformatted stats tag", []string{"--stats-tag", "novalue"}, "misformatted stats-tag 'novalue'"),
		)

		DescribeTable("refuse logging options that cannot work",
			func(args []string, culprit string) {
				r := Run(withBase(args)...)
				Expect(r.ExitCode).To(Equal(1), "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
				Expect(r.Stderr).To(MatchRegexp(`^error: [^\n]*%s[^\n]*\n$`, regexp.QuoteMeta(culprit)))
			},
			Entry("a log file in a missing directory", []string{"--log-path", "/nonexistent-outrigger-e2e/sidecar.log"},
				"/nonexistent-outrigger-e2e/sidecar.log"),
			Entry("a dangling % in the log format", []string{"--log-format", "[%l] %v %"}, "%"),
		)

		It("requires a configuration", func() {
			r := Run("--mode", "validate")
			Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
			Expect(r.Stderr).To(Equal("error: at least one of --config-path or --config-yaml must be given\n"))
		})

		// The wording of these comes from the flag parser; what matters is
		// one line that names the culprit.
		DescribeTable("report malformed values on one line naming the culprit",
			func(args []string, culprit string) {
				r := Run(withBase(args)...)
				Expect(r.ExitCode).To(Equal(1), "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
				Expect(r.Stderr).To(MatchRegexp(`^error: [^\n]*%s[^\n]*\n$`, regexp.QuoteMeta(culprit)))
			},
			Entry("unknown option", []string{"--no-such-option"}, "no-such-option"),
			Entry("an option given twice", []string{"--drain-time-s", "5", "--drain-time-s", "6"}, "--drain-time-s"),
			Entry("unknown short option", []string{"-x"}, "-x"),
			Entry("missing value", []string{"--drain-time-s"}, "drain-time-s"),
			Entry("non-numeric concurrency", []string{"--concurrency", "many"}, "many"),
			Entry("negative drain time", []string{"--drain-time-s", "-5"}, "-5"),
			Entry("base id beyond uint32", []string{"--base-id", "4294967296"}, "4294967296"),
			Entry("non-numeric flush interval", []string{"--file-flush-interval-msec", "1s"}, "1s"),
		)
	})

	Describe("--mode validate", func() {
		It("accepts a valid bootstrap without binding any port", func() {
			dir := newDir()
			// Both ports are held by this spec: validate must neither bind
			// them nor fail because they are taken.
			cfg := Bootstrap{
				AdminPort: holdPort(),
				Listeners: []Listener{helloListener("held", holdPort(), "hi")},
			}
			path := filepath.Join(dir, "bootstrap.yaml")
			writeFile(path, cfg.YAML())
			r := Run("--mode", "validate", "-c", path)
			Expect(r.ExitCode).To(Equal(0), "stderr: %s", r.Stderr)
			Expect(r.Stdout).To(Equal(fmt.Sprintf("configuration '%s' OK\n", path)))
		})

		It("writes no admin address file", func() {
			addr := filepath.Join(newDir(), "admin.addr")
			r := Run("--mode", "validate", "--config-yaml", minimalYAML, "--admin-address-path", addr)
			Expect(r.ExitCode).To(Equal(0), "stderr: %s", r.Stderr)
			Expect(addr).NotTo(BeAnExistingFile())
		})

		It("accepts the example the README runs", func() {
			path := filepath.Join("..", "..", "examples", "quickstart.yaml")
			r := Run("--mode", "validate", "-c", path)
			Expect(r.ExitCode).To(Equal(0), "stderr: %s", r.Stderr)
			Expect(r.Stdout).To(Equal(fmt.Sprintf("configuration '%s' OK\n", path)))
		})

		It("names an empty path when the bootstrap is given inline", func() {
			r := Run("--mode", "validate", "--config-yaml", minimalYAML)
			Expect(r.ExitCode).To(Equal(0), "stderr: %s", r.Stderr)
			Expect(r.Stdout).To(Equal("configuration '' OK\n"))
		})

		It("prints every error of an invalid bootstrap, one per line, and exits 1", func() {
			path := filepath.Join(newDir(), "bad.yaml")
			writeFile(path, readFile(filepath.Join("testdata", "invalid", "many_errors.yaml")))
			r := Run("--mode", "validate", "-c", path)
			Expect(r.ExitCode).To(Equal(1), "stdout: %s", r.Stdout)
			Expect(r.Stdout).NotTo(ContainSubstring("OK"))
			prefix := fmt.Sprintf("error initializing configuration '%s': ", path)
			// Besides the error lines, stderr may carry the application log
			// (it logs the same errors at critical level by default).
			var errs []string
			for _, l := range strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n") {
				if regexp.MustCompile(`^` + defaultLinePrefix).MatchString(l) {
					continue
				}
				Expect(l).To(HavePrefix(prefix))
				errs = append(errs, l)
			}
			Expect(len(errs)).To(BeNumerically(">=", 4), "every problem is reported, not only the first:\n%s", r.Stderr)
			Expect(r.Stderr).To(ContainSubstring(
				prefix + "admin.address.socket_address.port_value: value must be less than or equal to 65535\n"))
			expectGolden("validate_many_errors.txt", strings.ReplaceAll(strings.Join(errs, "\n")+"\n", path, "BOOTSTRAP"))
		})
	})

	Describe("--mode init_only", func() {
		It("initializes and exits 0", func() {
			dir := newDir()
			path := filepath.Join(dir, "bootstrap.yaml")
			writeFile(path, Bootstrap{Listeners: []Listener{helloListener("l", freePort(), "hi")}}.YAML())
			r := Run("--mode", "init_only", "-c", path)
			Expect(r.ExitCode).To(Equal(0), "stderr: %s", r.Stderr)
		})

		It("exits 1 on an invalid bootstrap", func() {
			r := Run("--mode", "init_only", "--config-yaml", `admin: {address: {socket_address: {address: 127.0.0.1, port_value: 70000}}}`)
			Expect(r.ExitCode).To(Equal(1))
			Expect(r.Stderr).To(ContainSubstring("admin.address.socket_address.port_value: value must be less than or equal to 65535"))
		})
	})
})
