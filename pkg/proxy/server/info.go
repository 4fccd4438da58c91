package server

import (
	goruntime "runtime"
	"strconv"
	"strings"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outrigger-dev/outrigger/pkg/proxy/options"
)

// UserAgentName is reported as node.user_agent_name.
const UserAgentName = "outrigger"

// ServerInfo implements admin.ServerInfoSource.
func (s *Server) ServerInfo() *adminv3.ServerInfo {
	uptime := durationpb.New(s.now().Sub(s.start).Truncate(1e9))
	return &adminv3.ServerInfo{
		Version:            options.BuildVersion(),
		State:              s.State(),
		UptimeCurrentEpoch: uptime,
		UptimeAllEpochs:    durationpb.New(s.now().Sub(s.originalStart()).Truncate(1e9)),
		HotRestartVersion:  s.HotRestartVersion(),
		CommandLineOptions: s.opts.CommandLineOptions(),
		Node:               s.node(),
	}
}

// node is the bootstrap node as the server completes it: the command line
// overrides were applied when loading; here the build identity and the
// extensions are added, as Envoy does: a user_agent_name or a
// user_agent_build_version with a version that the bootstrap sets is kept
// (a user_agent_version string gives way to the build version), and the
// extensions are appended to any the bootstrap lists. client_features,
// listening_addresses and dynamic_parameters go to the control plane as
// written.
func (s *Server) node() *corev3.Node {
	n := proto.Clone(s.boot.GetNode()).(*corev3.Node)
	if n == nil {
		n = &corev3.Node{}
	}
	if n.UserAgentName == "" {
		n.UserAgentName = UserAgentName
	}
	if n.GetUserAgentBuildVersion().GetVersion() == nil {
		n.UserAgentVersionType = &corev3.Node_UserAgentBuildVersion{UserAgentBuildVersion: &corev3.BuildVersion{
			Version: releaseVersion(options.Release),
		}}
	}
	for _, e := range s.ext.List() {
		n.Extensions = append(n.Extensions, &corev3.Extension{
			Name:     e.Name,
			Category: e.Category,
			TypeUrls: e.TypeURLs,
			Disabled: e.Disabled,
		})
	}
	return n
}

// releaseVersion parses "major.minor.patch[-suffix]"; parts that do not parse
// are reported as zero rather than failing /server_info.
func releaseVersion(release string) *typev3.SemanticVersion {
	core, _, _ := strings.Cut(release, "-")
	parts := strings.SplitN(core, ".", 3)
	nums := make([]uint32, 3)
	for i := range parts {
		n, err := strconv.ParseUint(parts[i], 10, 32)
		if err == nil {
			nums[i] = uint32(n)
		}
	}
	return &typev3.SemanticVersion{MajorNumber: nums[0], MinorNumber: nums[1], Patch: nums[2]}
}

// Memory implements admin.MemorySource with the Go runtime's figures (see
// docs/compat.md for how they map onto Envoy's tcmalloc fields).
func (s *Server) Memory() *adminv3.Memory {
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return &adminv3.Memory{
		Allocated:          m.HeapAlloc,
		HeapSize:           m.HeapSys,
		PageheapUnmapped:   m.HeapReleased,
		PageheapFree:       m.HeapIdle - m.HeapReleased,
		TotalThreadCache:   m.MCacheInuse,
		TotalPhysicalBytes: m.Sys - m.HeapReleased,
	}
}
