package deploy

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// imageConfig is what TestImage reads of `podman|docker image inspect`.
type imageConfig struct {
	Config struct {
		User         string
		Entrypoint   []string
		Cmd          []string
		Env          []string
		WorkingDir   string
		Labels       map[string]string
		ExposedPorts map[string]struct{}
	}
}

// imageFile is one file of the image's flattened layers.
type imageFile struct {
	hdr  *tar.Header
	data []byte // kept for the binary and the certificates only
}

// TestImage inspects the image TEST_IMAGE names (make image-test builds
// none: it inspects what make image or make image-offline built; .ci/run
// builds it and sets the variable): its user, entrypoint, environment and
// labels, that it holds only the binary, the CA certificates, the time zone
// database and /data, and that the binary is static and of this commit. It
// runs no container (this machine cannot): it reads the image's layers from
// `save` and runs `hookjet version` of the extracted binary on the host.
func TestImage(t *testing.T) {
	image := os.Getenv("TEST_IMAGE")
	if image == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("TEST_IMAGE is not set: under CI the image must be built and inspected (.ci/run: make image-offline, then TEST_IMAGE)")
		}
		t.Skip("TEST_IMAGE is not set: `make image-test` inspects the image `make image` built")
	}
	tool := os.Getenv("TEST_IMAGE_TOOL")
	if tool == "" {
		for _, name := range []string{"podman", "docker"} {
			if p, err := exec.LookPath(name); err == nil {
				tool = p
				break
			}
		}
	}
	if tool == "" {
		t.Fatal("TEST_IMAGE is set but neither podman nor docker is installed")
	}

	out, err := exec.Command(tool, "image", "inspect", image).Output()
	if err != nil {
		t.Fatalf("%s image inspect %s: %v", tool, image, exitErr(err))
	}
	var cfgs []imageConfig
	if err := json.Unmarshal(out, &cfgs); err != nil || len(cfgs) != 1 {
		t.Fatalf("image inspect: %v (%d images)", err, len(cfgs))
	}
	c := cfgs[0].Config

	// A numeric, non-root user and group: runAsNonRoot can only check a number.
	uid, gid, _ := strings.Cut(c.User, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %q: want a numeric uid other than 0", c.User)
	}
	if n, err := strconv.Atoi(gid); err != nil || n == 0 {
		t.Errorf("USER %q: want a numeric gid other than 0", c.User)
	}
	if want := []string{"/usr/local/bin/hookjet"}; !slices.Equal(c.Entrypoint, want) {
		t.Errorf("ENTRYPOINT %q, want %q", c.Entrypoint, want)
	}
	if want := []string{"serve"}; !slices.Equal(c.Cmd, want) {
		t.Errorf("CMD %q, want %q", c.Cmd, want)
	}
	if !slices.Contains(c.Env, "HOOKJET_DATA_DIR=/data") {
		t.Errorf("ENV %q: want HOOKJET_DATA_DIR=/data", c.Env)
	}
	if c.WorkingDir != "/data" {
		t.Errorf("WORKDIR %q, want /data", c.WorkingDir)
	}
	for _, p := range []string{"4222/tcp", "8089/tcp"} {
		if _, ok := c.ExposedPorts[p]; !ok {
			t.Errorf("EXPOSE: %s missing from %v", p, c.ExposedPorts)
		}
	}
	for _, l := range []string{"version", "revision", "source", "created"} {
		if c.Labels["org.opencontainers.image."+l] == "" {
			t.Errorf("label org.opencontainers.image.%s is missing or empty (labels %v)", l, c.Labels)
		}
	}
	version, revision := c.Labels["org.opencontainers.image.version"], c.Labels["org.opencontainers.image.revision"]
	// The commit of the tree under test, where git can say.
	if head, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		if h := strings.TrimSpace(string(head)); revision != h {
			t.Errorf("label revision %q, want this tree's commit %s (rebuild the image)", revision, h)
		}
	}

	files := imageFiles(t, tool, image)
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		switch {
		case name == "usr/local/bin/hookjet", name == "etc/ssl/certs/ca-certificates.crt", name == "data",
			strings.HasPrefix(name, "usr/share/zoneinfo/"):
		case slices.Contains([]string{"etc", "etc/ssl", "etc/ssl/certs", "usr", "usr/local", "usr/local/bin", "usr/share", "usr/share/zoneinfo"}, name):
		default:
			t.Errorf("unexpected file in the image: /%s", name)
		}
	}
	for _, name := range []string{"usr/share/zoneinfo/UTC", "usr/share/zoneinfo/Europe/Berlin", "usr/share/zoneinfo/America/New_York"} {
		if _, ok := files[name]; !ok {
			t.Errorf("/%s missing: the time zone database is incomplete", name)
		}
	}
	if f, ok := files["etc/ssl/certs/ca-certificates.crt"]; !ok {
		t.Error("/etc/ssl/certs/ca-certificates.crt missing")
	} else if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(f.data) {
		t.Error("/etc/ssl/certs/ca-certificates.crt holds no certificate")
	}
	if f, ok := files["data"]; !ok {
		t.Error("/data missing")
	} else if f.hdr.Typeflag != tar.TypeDir || strconv.Itoa(f.hdr.Uid) != uid || strconv.Itoa(f.hdr.Gid) != gid {
		t.Errorf("/data: type %c owner %d:%d, want a directory owned by %s:%s (the user writes its data_dir there)", f.hdr.Typeflag, f.hdr.Uid, f.hdr.Gid, uid, gid)
	}
	bin, ok := files["usr/local/bin/hookjet"]
	if !ok {
		t.Fatal("/usr/local/bin/hookjet missing")
	}
	if bin.hdr.Mode&0o111 == 0 {
		t.Errorf("/usr/local/bin/hookjet mode %o is not executable", bin.hdr.Mode)
	}
	exe := filepath.Join(t.TempDir(), "hookjet")
	if err := os.WriteFile(exe, bin.data, 0o755); err != nil {
		t.Fatal(err)
	}

	// Static: no program interpreter, no shared libraries.
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatalf("the binary is not ELF: %v", err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has a program interpreter: it is dynamically linked")
		}
	}
	if libs, _ := ef.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
	goarch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[ef.Machine]
	_ = ef.Close()

	bi, err := buildinfo.ReadFile(exe)
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" {
		t.Errorf("built with CGO_ENABLED=%q, want 0", settings["CGO_ENABLED"])
	}
	if bi.Path != "github.com/hookjet/hookjet/cmd/hookjet" {
		t.Errorf("the binary is %s, want github.com/hookjet/hookjet/cmd/hookjet", bi.Path)
	}
	// -trimpath leaves -ldflags out of the build information: the stamps
	// are the strings the linker wrote into the binary.
	for _, x := range []string{version, revision} {
		if x == "" || !bytes.Contains(bin.data, []byte(x)) {
			t.Errorf("the binary does not hold %q: not stamped with the image's version and commit", x)
		}
	}

	// hookjet version, run on the host where it can: the binary is static.
	if goarch != runtime.GOARCH || runtime.GOOS != "linux" {
		t.Logf("the image is %s: not running its binary on %s/%s", goarch, runtime.GOOS, runtime.GOARCH)
		return
	}
	got, err := exec.Command(exe, "version").Output()
	if err != nil {
		t.Fatalf("hookjet version: %v", exitErr(err))
	}
	t.Logf("hookjet version of the image's binary:\n%s", got)
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	want := []string{"hookjet " + version, "commit  " + revision, "built   " + c.Labels["org.opencontainers.image.created"]}
	if len(lines) < 3 || !slices.Equal(lines[:3], want) {
		t.Errorf("hookjet version printed\n%s\nwant it to start with\n%s", got, strings.Join(want, "\n"))
	}
}

// imageFiles saves image as an archive and flattens its layers: path (no
// leading slash) to the last version of each file.
func imageFiles(t *testing.T, tool, image string) map[string]imageFile {
	t.Helper()
	archive := filepath.Join(t.TempDir(), "image.tar")
	if out, err := exec.Command(tool, "save", "-o", archive, image).CombinedOutput(); err != nil {
		t.Fatalf("%s save: %v\n%s", tool, err, out)
	}
	entries := readTar(t, archive)
	var manifest []struct{ Layers []string }
	if err := json.Unmarshal(entries["manifest.json"].data, &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("manifest.json of the saved image: %v", err)
	}
	files := map[string]imageFile{}
	for _, layer := range manifest[0].Layers {
		l, ok := entries[layer]
		if !ok {
			t.Fatalf("layer %s missing from the saved image", layer)
		}
		tr := tar.NewReader(bytes.NewReader(l.data))
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("layer %s: %v", layer, err)
			}
			name := strings.TrimSuffix(path.Clean(strings.TrimPrefix(hdr.Name, "./")), "/")
			if name == "." || name == "" {
				continue
			}
			if base := path.Base(name); strings.HasPrefix(base, ".wh.") {
				delete(files, path.Join(path.Dir(name), strings.TrimPrefix(base, ".wh.")))
				continue
			}
			f := imageFile{hdr: hdr}
			if name == "usr/local/bin/hookjet" || name == "etc/ssl/certs/ca-certificates.crt" {
				if f.data, err = io.ReadAll(tr); err != nil {
					t.Fatal(err)
				}
			}
			files[name] = f
		}
	}
	return files
}

// readTar reads the entries of a tar file.
func readTar(t *testing.T, name string) map[string]imageFile {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]imageFile{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(hdr.Name, "./")] = imageFile{hdr: hdr, data: data}
	}
}

// exitErr adds a failed command's standard error to its error.
func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return errors.New(err.Error() + ": " + strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}
