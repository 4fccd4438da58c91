package e2e

import (
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("/server_info", func() {
	It("is Envoy-style JSON with every field printed", func() {
		s := Start(newDir(), Bootstrap{}.YAML())
		r := s.Get("/server_info")
		Expect(r.Status).To(Equal(200))
		Expect(r.Header.Get("Content-Type")).To(Equal("application/json"))
		Expect(r.Body).To(HavePrefix("{\n \"version\": \""), "one-space indent, proto field order")
		Expect(r.Body).To(HaveSuffix("\n}\n"))
		Expect(r.Body).To(ContainSubstring(`"state": "LIVE"`))
		Expect(r.Body).To(ContainSubstring(`  "base_id": "0"`), "64-bit integers are strings; zeros are printed")
		Expect(r.Body).To(ContainSubstring(`  "config_yaml": ""`), "empty strings are printed")
		Expect(r.Body).To(ContainSubstring(`  "disabled_extensions": []`), "empty lists are printed")
		Expect(r.Body).To(ContainSubstring(`  "restart_epoch": 0`), "32-bit integers are bare")
	})

	It("reports the version, state, uptimes and defaults", func() {
		// A base id of its own keeps the default socket path free of
		// clashes with other sidecars.
		s := Start(newDir(), Bootstrap{}.YAML(), "--base-id", strconv.Itoa(randomBaseID()))
		info := s.ServerInfo()

		cliVersion := strings.TrimSuffix(strings.TrimPrefix(Run("--version").Stdout, "\noutrigger  version: "), "\n\n")
		Expect(info.GetVersion()).To(Equal(cliVersion))
		Expect(info.GetState()).To(Equal(adminv3.ServerInfo_LIVE))
		Expect(info.GetHotRestartVersion()).To(Equal("1.60.16384"))
		Expect(info.GetUptimeCurrentEpoch().AsDuration()).To(BeNumerically(">=", 0))
		Expect(info.GetUptimeAllEpochs().AsDuration()).To(BeNumerically(">=", info.GetUptimeCurrentEpoch().AsDuration()))

		o := info.GetCommandLineOptions()
		Expect(o.GetConfigPath()).To(Equal(s.ConfigPath))
		Expect(o.GetAdminAddressPath()).To(Equal(s.AddressPath))
		Expect(o.GetMode()).To(Equal(adminv3.CommandLineOptions_Serve))
		Expect(o.GetConcurrency()).To(BeNumerically(">=", 1), "defaults to the hardware threads")
		Expect(o.GetLogLevel()).To(Equal("info"))
		Expect(o.GetLogFormat()).To(Equal("[%Y-%m-%d %T.%e][%t][%l][%n] [%g:%#] %v"))
		Expect(o.GetLocalAddressIpVersion()).To(Equal(adminv3.CommandLineOptions_v4))
		Expect(o.GetDrainTime().AsDuration()).To(Equal(600 * time.Second))
		Expect(o.GetParentShutdownTime().AsDuration()).To(Equal(900 * time.Second))
		Expect(o.GetFileFlushInterval().AsDuration()).To(Equal(10 * time.Second))
		Expect(o.GetDrainStrategy()).To(Equal(adminv3.CommandLineOptions_Gradual))
		Expect(o.GetSocketPath()).To(Equal("@proxy_domain_socket"))
		Expect(o.GetSocketMode()).To(BeZero(), "reported 0 for an abstract socket")
		Expect(o.GetDisableHotRestart()).To(BeFalse())
		Expect(o.GetEnableMutexTracing()).To(BeFalse())
		Expect(o.GetRestartEpoch()).To(BeZero())

		Expect(info.GetNode().GetUserAgentName()).To(Equal("outrigger"))
	})

	It("reflects the options given", func() {
		dir := newDir()
		socket := filepath.Join(dir, "hot_restart.sock")
		s := Start(dir, Bootstrap{}.YAML(),
			"--concurrency", "3",
			"--base-id", "7",
			"--drain-time-s", "30",
			"--drain-strategy", "immediate",
			"--parent-shutdown-time-s", "60",
			"--file-flush-interval-msec", "250",
			"--disable-hot-restart",
			"--enable-mutex-tracing",
			"--service-cluster", "svc",
			"--stats-tag", "team:edge",
			"--socket-path", socket,
			"--socket-mode", "644",
		)
		info := s.ServerInfo()
		o := info.GetCommandLineOptions()
		Expect(o.GetConcurrency()).To(BeEquivalentTo(3))
		Expect(o.GetBaseId()).To(BeEquivalentTo(7))
		Expect(o.GetDrainTime().AsDuration()).To(Equal(30 * time.Second))
		Expect(o.GetDrainStrategy()).To(Equal(adminv3.CommandLineOptions_Immediate))
		Expect(o.GetParentShutdownTime().AsDuration()).To(Equal(60 * time.Second))
		Expect(o.GetFileFlushInterval().AsDuration()).To(Equal(250 * time.Millisecond))
		Expect(o.GetDisableHotRestart()).To(BeTrue())
		Expect(info.GetHotRestartVersion()).To(Equal("disabled"))
		Expect(o.GetEnableMutexTracing()).To(BeTrue())
		Expect(o.GetServiceCluster()).To(Equal("svc"))
		Expect(info.GetNode().GetCluster()).To(Equal("svc"))
		Expect(o.GetStatsTag()).To(Equal([]string{"team:edge"}))
		Expect(o.GetSocketPath()).To(Equal(socket))
		Expect(o.GetSocketMode()).To(BeEquivalentTo(0o644))
	})

	It("reports the remaining flags", func() {
		s := Start(newDir(), Bootstrap{}.YAML(), "--enable-core-dump", "--local-address-ip-version", "v6",
			"--log-format-escaped", "--skip-deprecated-logs", "--file-flush-min-size-kb", "8")
		o := s.ServerInfo().GetCommandLineOptions()
		Expect(o.GetEnableCoreDump()).To(BeTrue())
		Expect(o.GetLocalAddressIpVersion()).To(Equal(adminv3.CommandLineOptions_v6))
		Expect(o.GetLogFormatEscaped()).To(BeTrue())
		Expect(o.GetSkipDeprecatedLogs()).To(BeTrue())
		Expect(o.GetFileFlushMinSize()).To(BeEquivalentTo(8))
	})

	It("writes the base id to --base-id-path", func() {
		dir := newDir()
		path := filepath.Join(dir, "base_id")
		Start(dir, Bootstrap{}.YAML(), "--base-id", "5", "--base-id-path", path)
		Expect(strings.TrimSpace(readFile(path))).To(Equal("5"))
	})

	Describe("--cpuset-threads", func() {
		It("sizes the workers from the CPU affinity", func() {
			s := Start(newDir(), Bootstrap{}.YAML(), "--cpuset-threads")
			o := s.ServerInfo().GetCommandLineOptions()
			Expect(o.GetCpusetThreads()).To(BeTrue())
			// Go's NumCPU is the size of this process's affinity mask, which
			// the child inherits.
			Expect(o.GetConcurrency()).To(BeEquivalentTo(runtime.NumCPU()))
		})

		It("yields to an explicit --concurrency, with a warning", func() {
			dir := newDir()
			logPath := filepath.Join(dir, "sidecar.log")
			s := Start(dir, Bootstrap{}.YAML(), "--cpuset-threads", "--concurrency", "3",
				"--log-path", logPath, "--file-flush-interval-msec", "100")
			Expect(s.ServerInfo().GetCommandLineOptions().GetConcurrency()).To(BeEquivalentTo(3))
			Eventually(func() string { return readFile(logPath) }).Should(ContainSubstring(
				"Both --concurrency and --cpuset-threads options are set; not applying --cpuset-threads."))
		})
	})

	It("runs one worker for --concurrency 0", func() {
		s := Start(newDir(), Bootstrap{}.YAML(), "--concurrency", "0")
		Expect(s.ServerInfo().GetCommandLineOptions().GetConcurrency()).To(BeEquivalentTo(1))
	})

	It("reports DRAINING after /healthcheck/fail", func() {
		s := Start(newDir(), Bootstrap{}.YAML())
		Expect(s.Post("/healthcheck/fail").Status).To(Equal(200))
		Expect(s.Get("/server_info").Body).To(ContainSubstring(`"state": "DRAINING"`))
	})
})

var _ = Describe("The node identity a bootstrap written by Envoy's /config_dump carries", func() {
	It("keeps the user agent and build version it sets, appends the extensions and passes the rest on, as Envoy does", func() {
		node := `node: {id: n1, cluster: c1, user_agent_name: custom-agent,
  user_agent_build_version: {version: {major_number: 9, minor_number: 8, patch: 7}},
  extensions: [{name: my.extension, category: my.category}],
  client_features: [envoy.lb.does_not_support_overprovisioning],
  listening_addresses: [{socket_address: {address: 127.0.0.1, port_value: 1}}]}
`
		s := Start(newDir(), node+Bootstrap{}.YAML())
		n := s.ServerInfo().GetNode()
		Expect(n.GetUserAgentName()).To(Equal("custom-agent"))
		v := n.GetUserAgentBuildVersion().GetVersion()
		Expect([]uint32{v.GetMajorNumber(), v.GetMinorNumber(), v.GetPatch()}).To(Equal([]uint32{9, 8, 7}))
		Expect(len(n.GetExtensions())).To(BeNumerically(">", 10))
		Expect(n.GetExtensions()[0].GetName()).To(Equal("my.extension"))
		Expect(n.GetExtensions()[1].GetName()).NotTo(Equal("my.extension"))
		Expect(n.GetClientFeatures()).To(Equal([]string{"envoy.lb.does_not_support_overprovisioning"}))
		//lint:ignore SA1019 a deprecated field Envoy still passes on
		Expect(n.GetListeningAddresses()).To(HaveLen(1))

		// A user_agent_version string gives way to the build version.
		s2 := Start(newDir(), "node: {id: n2, user_agent_version: '1.0'}\n"+Bootstrap{}.YAML())
		n = s2.ServerInfo().GetNode()
		Expect(n.GetUserAgentName()).To(Equal("outrigger"))
		Expect(n.GetUserAgentVersion()).To(BeEmpty())
		Expect(n.GetUserAgentBuildVersion().GetVersion()).NotTo(BeNil())
	})
})
