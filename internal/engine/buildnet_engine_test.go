//go:build engine

package engine_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// TestDaemonBuildsWithNetwork checks that the Docker daemon the tests use
// can still give a build step a network on its default bridge: the step
// opens a TCP connection to the package mirror the Python image's apt
// sources name. A second daemon started with no bridge of its own deletes
// the interface docker0, after which such a build fails with "could not
// find bridge docker0"; .ci/run runs this test again at its end, after the
// gVisor daemon has come and gone, so a run that leaves the machine unable
// to build fails.
func TestDaemonBuildsWithNetwork(t *testing.T) {
	img := pythonImage(t)
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	const probe = `import re, socket
src = open("/etc/apt/sources.list").read()
host = re.search(r"https?://([^/\s]+)", src).group(1)
socket.create_connection((host, 80), timeout=30).close()
print("reached the package mirror")
`
	dockerfile := fmt.Sprintf("FROM %s\nUSER root\nCOPY probe.py /probe.py\nRUN python3 /probe.py\n", img)
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for _, f := range []struct{ name, body string }{{"Dockerfile", dockerfile}, {"probe.py", probe}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, f.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}

	tag := fmt.Sprintf("strictgrade-test/buildnet:%d-%d", os.Getpid(), time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	resp, err := cli.ImageBuild(ctx, &ctxTar, build.ImageBuildOptions{
		Tags: []string{tag}, Remove: true, ForceRemove: true, NoCache: true,
		Labels: map[string]string{"dev.strictgrade.test": "buildnet"},
	})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	t.Cleanup(func() {
		cli.ImageRemove(context.Background(), tag, image.RemoveOptions{Force: true, PruneChildren: true})
	})
	defer resp.Body.Close()
	var log strings.Builder
	dec := json.NewDecoder(resp.Body)
	for {
		var m struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("reading the build's progress: %v\n%s", err, log.String())
		}
		log.WriteString(m.Stream)
		if m.Error != "" {
			t.Fatalf("the build failed: %s\n%s", m.Error, log.String())
		}
	}
	if !strings.Contains(log.String(), "reached the package mirror") {
		t.Fatalf("the build's network step did not report:\n%s", log.String())
	}
}
