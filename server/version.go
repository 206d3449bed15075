package server

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// Version, Commit and BuildDate say what this binary is. make build, make
// release and the Dockerfile set them with -ldflags "-X
// github.com/hookjet/hookjet/server.Version=v1.2.3 -X ...Commit=<sha> -X
// ...BuildDate=2026-12-06T20:54:28Z"; read them through [Build], which fills
// what was not set from the module's build information.
var (
	// Version is the release: a semantic version tag (v1.2.3), or what git
	// describe says past it (v1.2.3-4-gabc1234, -dirty for a modified
	// tree). Default "v0.0.0-dev": a build that was not stamped.
	Version = "v0.0.0-dev"
	// Commit is the full git commit the binary was built from; empty
	// means not stamped.
	Commit = ""
	// BuildDate is when the binary was built (RFC 3339, UTC); empty means
	// not stamped.
	BuildDate = ""
)

// BuildInfo says what a hookjet binary is.
type BuildInfo struct {
	Version string // a semantic version tag, or git describe past one
	Commit  string // the git commit; "unknown" when neither stamped nor recorded
	Date    string // the build date, RFC 3339 UTC; "unknown" likewise
	Go      string // the Go release and the platform: "go1.26.8 linux/amd64"
}

// Build returns what this binary is: the -X stamps, and where one is
// missing what the Go toolchain recorded (go install ...@v1.2.3 records the
// module version; a build inside a git work tree, the commit and its time).
var Build = sync.OnceValue(func() BuildInfo {
	b := BuildInfo{Version: Version, Commit: Commit, Date: BuildDate, Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := info.Main.Version; b.Version == "v0.0.0-dev" && v != "" && v != "(devel)" {
			b.Version = v
		}
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && b.Commit == "":
				b.Commit = s.Value
			case s.Key == "vcs.time" && b.Date == "":
				b.Date = s.Value
			}
		}
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	if b.Date == "" {
		b.Date = "unknown"
	}
	return b
})

// UserAgent is sent with every delivery.
func UserAgent() string { return "hookjet/" + Build().Version }
