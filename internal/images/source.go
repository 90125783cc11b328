package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strings"
)

// modulePath is this module; its binaries are built with it as the main
// module, whichever module embeds the library.
const modulePath = "github.com/strictgrade/strictgrade"

//go:generate go test -run TestJudgeSourceRecorded -update .

// buildEnv is the environment every Go binary of an image is built in:
// nothing of the caller's go environment that changes the output
// survives, and no workspace or vendor setting of the caller applies.
func buildEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		k, _, _ := strings.Cut(e, "=")
		if strings.HasPrefix(k, "GO") || k == "CGO_ENABLED" {
			switch k {
			case "GOPATH", "GOMODCACHE", "GOCACHE", "GOPROXY", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOSUMDB", "GOINSECURE", "GOTOOLCHAIN", "GOROOT":
			default:
				continue
			}
		}
		env = append(env, e)
	}
	return append(env, "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goruntime.GOARCH,
		"GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT=", "GOWORK=off", "GOFLAGS=-mod=readonly")
}

// goCmd runs the go command in dir and returns its standard output.
func goCmd(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if errors.Is(err, exec.ErrNotFound) {
		return nil, fmt.Errorf("building strictgrade's images needs the Go toolchain: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// moduleDir finds this module's source: the module the working directory
// belongs to, or requires, or else the version this program was built
// with, downloaded into the module cache.
func moduleDir(ctx context.Context) (string, error) {
	out, err := goCmd(ctx, "", os.Environ(), "list", "-m", "-f", "{{.Dir}}", modulePath)
	if dir := strings.TrimSpace(string(out)); err == nil && dir != "" {
		return dir, nil
	}
	version := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == modulePath {
			version = bi.Main.Version
		}
		for _, m := range bi.Deps {
			if m.Path == modulePath {
				version = m.Version
			}
		}
	}
	if version == "" || version == "(devel)" {
		return "", fmt.Errorf("cannot find the source of %s: run from its source tree or from a module that requires it", modulePath)
	}
	out, err = goCmd(ctx, "", os.Environ(), "mod", "download", "-json", modulePath+"@"+version)
	if err != nil {
		return "", err
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: no directory", modulePath, version)
	}
	return m.Dir, nil
}

// sourceHash returns the hash of everything that goes into the binaries
// of pkgs when built in the module at dir: the go directive, the name and
// content of every file of this module they compile or embed, and the
// version of every other module they import. It is what a Go image's
// recipe records, computed ahead of time for the judge (judgeSource).
func sourceHash(ctx context.Context, dir string, pkgs []string) (string, error) {
	args := append([]string{"list", "-deps", "-json=ImportPath,Dir,Standard,GoFiles,EmbedFiles,Module"}, pkgs...)
	out, err := goCmd(ctx, dir, buildEnv(), args...)
	if err != nil {
		return "", err
	}
	type module struct {
		Path, Version, Dir, GoVersion string
		Replace                       *module
	}
	var (
		files   []string
		mods    []string
		goLine  string
		modRoot string
	)
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath, Dir     string
			Standard            bool
			GoFiles, EmbedFiles []string
			Module              *module
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return "", fmt.Errorf("go list: %w", err)
		}
		switch {
		case p.Standard:
		case p.Module == nil:
			return "", fmt.Errorf("package %s has no module", p.ImportPath)
		case p.Module.Path == modulePath:
			goLine, modRoot = p.Module.GoVersion, p.Module.Dir
			for _, f := range slices.Concat(p.GoFiles, p.EmbedFiles) {
				data, err := os.ReadFile(filepath.Join(p.Dir, f))
				if err != nil {
					return "", err
				}
				rel, err := filepath.Rel(modRoot, filepath.Join(p.Dir, f))
				if err != nil {
					return "", err
				}
				sum := sha256.Sum256(data)
				files = append(files, filepath.ToSlash(rel)+" "+hex.EncodeToString(sum[:]))
			}
		default:
			m := p.Module
			if m.Replace != nil {
				m = m.Replace
			}
			mods = append(mods, p.Module.Path+"@"+m.Version)
		}
	}
	slices.Sort(files)
	slices.Sort(mods)
	return hashJSON(struct {
		Go      string
		Files   []string
		Modules []string
	}{goLine, files, slices.Compact(mods)}), nil
}
