package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/outrigger-dev/outrigger/pkg/proxy/options"
)

// tag is the tag the test pushes (the default, the chart's appVersion, is
// checked by hack/imagebuild's own tests).
const tag = "test"

// caBundle is the build machine's CA bundle hack/imagebuild copies in.
const caBundle = "/etc/ssl/certs/ca-certificates.crt"

// components and platforms the images must have.
var (
	components = []string{"sidecar", "controller"}
	platforms  = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}
)

// pushedRe matches a "pushed <ref>@<digest>" line of imagebuild push.
var pushedRe = regexp.MustCompile(`(?m)^pushed (\S+)@(sha256:[0-9a-f]{64})$`)

// builtRe matches a "<name> <layout>@<digest>" line of imagebuild build.
var builtRe = regexp.MustCompile(`(?m)^(sidecar|controller) \S+@(sha256:[0-9a-f]{64})$`)

// TestImages is the whole path, in order, sharing one cross-compilation:
// push to a TLS registry with -insecure, pull back and inspect, run the
// binaries, rebuild and compare digests.
func TestImages(t *testing.T) {
	start := time.Now()
	root := repoRoot(t)
	tool := buildTool(t, root)
	srv := httptest.NewTLSServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "https://")
	out := t.TempDir()

	// The push path of `make push REGISTRY=<host>/outrigger TAG=test
	// INSECURE=1`: the registry's certificate is the test's own, which
	// only -insecure accepts.
	stdout := runTool(t, root, tool, nil, "push", "-out", out, "-tag", tag, "-registry", host+"/outrigger", "-insecure")
	pushed := map[string]string{}
	for _, m := range pushedRe.FindAllStringSubmatch(stdout, -1) {
		pushed[m[1]] = m[2]
	}
	t.Logf("pushed after %s: %v", time.Since(start).Round(time.Second), pushed)

	pull := []remote.Option{remote.WithTransport(srv.Client().Transport)}
	var created time.Time
	for _, c := range components {
		ref, err := name.NewTag(host + "/outrigger/" + c + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		want, ok := pushed[ref.String()]
		if !ok {
			t.Fatalf("no 'pushed %s@...' line in imagebuild's output:\n%s", ref, stdout)
		}
		idx, err := remote.Index(ref, pull...)
		if err != nil {
			t.Fatalf("pull %s: %v", ref, err)
		}
		if d, err := idx.Digest(); err != nil || d.String() != want {
			t.Fatalf("%s: pulled index digest %v (%v), pushed %s", ref, d, err, want)
		}
		created = checkIndex(t, c, idx)
		checkLayout(t, filepath.Join(out, c), want)
	}
	if ct := commitTime(t, root); !ct.IsZero() && !created.Equal(ct) {
		t.Errorf("images created at %s, want the commit time %s", created, ct)
	}

	// Reproducible: the same source and the same creation time give the
	// same digests, into another folder.
	epoch := strconv.FormatInt(created.Unix(), 10)
	stdout = runTool(t, root, tool, []string{"SOURCE_DATE_EPOCH=" + epoch}, "build", "-out", t.TempDir(), "-tag", tag)
	rebuilt := builtRe.FindAllStringSubmatch(stdout, -1)
	if len(rebuilt) != len(components) {
		t.Fatalf("rebuild printed %d images, want %d:\n%s", len(rebuilt), len(components), stdout)
	}
	for _, m := range rebuilt {
		ref := host + "/outrigger/" + m[1] + ":" + tag
		if m[2] != pushed[ref] {
			t.Errorf("%s: rebuilt digest %s, pushed %s: the build is not reproducible", m[1], m[2], pushed[ref])
		}
	}
	t.Logf("TestImages took %s", time.Since(start).Round(time.Second))
}

// checkLayout checks the OCI layout `make image` leaves in dir: it holds
// one image index, the pushed one, named by the tag.
func checkLayout(t *testing.T, dir, digest string) {
	t.Helper()
	ii, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("OCI layout %s: %v", dir, err)
	}
	im, err := ii.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("%s/index.json lists %d manifests, want 1", dir, len(im.Manifests))
	}
	d := im.Manifests[0]
	if d.MediaType != types.OCIImageIndex || d.Digest.String() != digest || d.Annotations["org.opencontainers.image.ref.name"] != tag {
		t.Errorf("%s/index.json: %s %s named %q, want the pushed index %s named %q", dir, d.MediaType, d.Digest, d.Annotations["org.opencontainers.image.ref.name"], digest, tag)
	}
}

// checkIndex checks component c's image index and each platform's image;
// it returns the images' creation time.
func checkIndex(t *testing.T, c string, idx v1.ImageIndex) time.Time {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("%s: index media type %q, want %q", c, im.MediaType, types.OCIImageIndex)
	}
	if len(im.Manifests) != len(platforms) {
		t.Fatalf("%s: %d manifests in the index, want %d", c, len(im.Manifests), len(platforms))
	}
	var created time.Time
	for i, want := range platforms {
		d := im.Manifests[i]
		if d.Platform == nil || !d.Platform.Equals(want) {
			t.Fatalf("%s: manifest %d is for platform %v, want %s", c, i, d.Platform, want.String())
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		created = checkImage(t, c, want, img, im.Annotations)
	}
	return created
}

// checkImage checks one platform's image: config, labels, files, and the
// binary inside (run when it is for this machine).
func checkImage(t *testing.T, c string, p v1.Platform, img v1.Image, indexAnnotations map[string]string) time.Time {
	t.Helper()
	what := c + " " + p.String()
	if mt, err := img.MediaType(); err != nil || mt != types.OCIManifestSchema1 {
		t.Errorf("%s: manifest media type %q (%v), want %q", what, mt, err, types.OCIManifestSchema1)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		t.Errorf("%s: config platform %s/%s", what, cf.OS, cf.Architecture)
	}
	entry := "/usr/local/bin/" + c
	if cf.Config.User != "65532:65532" {
		t.Errorf("%s: user %q, want 65532:65532", what, cf.Config.User)
	}
	if len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != entry || len(cf.Config.Cmd) != 0 {
		t.Errorf("%s: entrypoint %q cmd %q, want [%s] and no cmd", what, cf.Config.Entrypoint, cf.Config.Cmd, entry)
	}
	if cf.Config.WorkingDir != "/" {
		t.Errorf("%s: working dir %q, want /", what, cf.Config.WorkingDir)
	}
	lbl := cf.Config.Labels
	for k, want := range map[string]string{
		"org.opencontainers.image.title":   "outrigger-" + c,
		"org.opencontainers.image.version": options.Release,
		"org.opencontainers.image.source":  "https://github.com/outrigger-dev/outrigger",
	} {
		if lbl[k] != want {
			t.Errorf("%s: label %s = %q, want %q", what, k, lbl[k], want)
		}
	}
	for k, v := range lbl {
		if indexAnnotations[k] != v {
			t.Errorf("%s: index annotation %s = %q, the image's label says %q", what, k, indexAnnotations[k], v)
		}
	}
	created, err := time.Parse(time.RFC3339, lbl["org.opencontainers.image.created"])
	if err != nil {
		t.Fatalf("%s: created label: %v", what, err)
	}
	if !cf.Created.Time.Equal(created) {
		t.Errorf("%s: config created %s, label %s", what, cf.Created.Time, created)
	}

	files := readFiles(t, img)
	bin, ok := files[entry]
	switch {
	case !ok:
		t.Fatalf("%s: no %s in the image", what, entry)
	case bin.hdr.Typeflag != tar.TypeReg || bin.hdr.Mode != 0o755 || bin.hdr.Uid != 0:
		t.Errorf("%s: %s is type %c mode %o uid %d, want a regular file 755 of root", what, entry, bin.hdr.Typeflag, bin.hdr.Mode, bin.hdr.Uid)
	}
	checkELF(t, what, p, bin.data)
	if !bytes.Contains(files["/etc/passwd"].data, []byte("\nnonroot:x:65532:65532:")) {
		t.Errorf("%s: /etc/passwd has no nonroot user 65532:\n%s", what, files["/etc/passwd"].data)
	}
	if !bytes.Contains(files["/etc/group"].data, []byte("\nnonroot:x:65532:")) {
		t.Errorf("%s: /etc/group has no nonroot group 65532:\n%s", what, files["/etc/group"].data)
	}
	if tmp, ok := files["/tmp"]; !ok || tmp.hdr.Typeflag != tar.TypeDir || tmp.hdr.Mode != 0o1777 {
		t.Errorf("%s: /tmp is %+v, want a folder with mode 1777", what, tmp.hdr)
	}
	if home, ok := files["/home/nonroot"]; !ok || home.hdr.Uid != 65532 || home.hdr.Mode != 0o700 {
		t.Errorf("%s: /home/nonroot is %+v, want a folder 700 of 65532", what, home.hdr)
	}
	want, err := os.ReadFile(caBundle)
	if errors.Is(err, os.ErrNotExist) {
		want = nil
	} else if err != nil {
		t.Fatal(err)
	}
	if got := files["/etc/ssl/certs/ca-certificates.crt"].data; !bytes.Equal(got, want) {
		t.Errorf("%s: /etc/ssl/certs/ca-certificates.crt has %d bytes, the build machine's %s %d", what, len(got), caBundle, len(want))
	}
	for path, f := range files {
		if !f.hdr.ModTime.Equal(created) {
			t.Errorf("%s: %s modified at %s, want the creation time %s", what, path, f.hdr.ModTime, created)
		}
	}
	if p.Architecture == "amd64" {
		runBinary(t, c, bin.data, lbl["org.opencontainers.image.revision"])
	}
	return created
}

// file is one entry of an image's file system.
type file struct {
	hdr  *tar.Header
	data []byte
}

// readFiles reads the image's flattened file system, keyed by absolute
// path without a trailing slash.
func readFiles(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.Trim(h.Name, "/")] = file{hdr: h, data: data}
	}
}

// checkELF checks that a binary is a static Linux executable for p.
func checkELF(t *testing.T, what string, p v1.Platform, bin []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("%s: the binary is not ELF: %v", what, err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
	if f.Machine != want {
		t.Errorf("%s: binary for machine %s, want %s", what, f.Machine, want)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s: binary has a program interpreter: it is not static (CGO_ENABLED=0)", what)
		}
	}
}

// runBinary runs a binary taken out of the amd64 image on this machine:
// the sidecar's --version must report the image's revision label and the
// release, the controller's --help its usage.
func runBinary(t *testing.T, c string, bin []byte, revision string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), c)
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if c == "controller" {
		// The controller has no --version; its --help shows it starts.
		out, err := exec.Command(path, "--help").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "Usage: controller [flags]") {
			t.Errorf("controller --help: %v\n%s", err, out)
		}
		return
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("sidecar --version: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`outrigger  version: ([0-9a-f]{40})/([^/]+)/(Clean|Modified)/RELEASE/GoTLS\n`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("sidecar --version printed %q", out)
	}
	t.Logf("sidecar in the image: %s", strings.TrimSpace(string(out)))
	if m[2] != options.Release {
		t.Errorf("sidecar --version release %q, want %q", m[2], options.Release)
	}
	wantRev := revision
	if wantRev == "" {
		// No VCS information (a git worktree, or no checkout): no label,
		// and --version reports the zero revision.
		wantRev = strings.Repeat("0", 40)
	}
	if m[1] != wantRev {
		t.Errorf("sidecar --version revision %s, the image's revision label %q", m[1], revision)
	}
	if head := gitHead(t, repoRoot(t)); head != "" && m[1] != head {
		t.Errorf("sidecar --version revision %s, git HEAD %s", m[1], head)
	}
}

// TestPushWithoutRegistry checks that a push without a registry says what
// to set and fails with exit code 1 before building anything, from the
// program and from make.
func TestPushWithoutRegistry(t *testing.T) {
	root := repoRoot(t)
	tool := buildTool(t, root)
	out := t.TempDir()
	cmd := exec.Command(tool, "push", "-out", out)
	cmd.Dir = root
	msg, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("imagebuild push without -registry: %v, want exit code 1\n%s", err, msg)
	}
	if !strings.Contains(string(msg), "set REGISTRY") {
		t.Errorf("imagebuild push without -registry says %q, want it to name REGISTRY", msg)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("imagebuild push without -registry built %d things into -out first", len(entries))
	}

	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	cmd = exec.Command("make", "--no-print-directory", "push", "REGISTRY=", "BIN="+out)
	cmd.Dir = root
	cmd.Env = withoutMake(os.Environ())
	msg, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "error: no registry to push to: set REGISTRY") {
		t.Errorf("make push without REGISTRY: %v, want a failure naming REGISTRY\n%s", err, msg)
	}
}

// withoutMake drops the variables a calling make passes to its children,
// so the make the test runs is independent of the make running the test.
func withoutMake(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "REGISTRY", "TAG", "INSECURE":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// repoRoot is the repository's root: two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "hack", "imagebuild")); err != nil {
		t.Fatalf("repository root: %v", err)
	}
	return root
}

// buildTool builds hack/imagebuild into a temporary folder.
func buildTool(t *testing.T, root string) string {
	t.Helper()
	tool := filepath.Join(t.TempDir(), "imagebuild")
	cmd := exec.Command(goCmd(), "build", "-o", tool, "./hack/imagebuild")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./hack/imagebuild: %v\n%s", err, out)
	}
	return tool
}

// runTool runs imagebuild from the repository root with extra environment
// and returns its stdout; it fails the test on a non-zero exit, showing
// stderr.
func runTool(t *testing.T, root, tool string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(tool, args...)
	cmd.Dir = root
	cmd.Env = append(withoutMake(os.Environ()), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("imagebuild %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	t.Logf("imagebuild %s (%s):\n%s", args[0], time.Since(start).Round(time.Second), stderr.String())
	return stdout.String()
}

// gitHead is the checkout's HEAD commit when root is a plain git checkout
// (Go stamps binaries from those; not from git worktrees), else "".
func gitHead(t *testing.T, root string) string {
	t.Helper()
	if fi, err := os.Stat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
		return ""
	}
	out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// commitTime is the HEAD commit's time in a plain git checkout (see
// gitHead), else the zero time.
func commitTime(t *testing.T, root string) time.Time {
	t.Helper()
	if gitHead(t, root) == "" {
		return time.Time{}
	}
	out, err := exec.Command("git", "-C", root, "log", "-1", "--format=%ct").Output()
	if err != nil {
		t.Fatalf("git log: %v", err)
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("git log: %v", err)
	}
	return time.Unix(sec, 0)
}

// goCmd is the go command: $GO, else go from PATH.
func goCmd() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}
