// Package version reports the controller version that verdicts record.
package version

import "runtime/debug"

// Version is the release version of strictgrade. Builds may override it with
// -ldflags "-X github.com/strictgrade/strictgrade/internal/version.Version=…".
var Version = "0.1.0-dev"

// String returns the version followed by the VCS revision when the binary
// was built from a checkout, e.g. "0.1.0-dev+3f2a9c1".
func String() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Version
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return Version
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return Version + "+" + rev
}
