package cli

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// TestQuietKlog: what client-go logs as an error through klog reaches the
// CLI's log at debug level only, and never standard error directly.
func TestQuietKlog(t *testing.T) {
	defer klog.ClearLogger()
	for _, c := range []struct {
		level slog.Level
		shown bool
	}{{slog.LevelInfo, false}, {slog.LevelDebug, true}} {
		var buf bytes.Buffer
		quietKlog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: c.level})))
		klog.ErrorS(errors.New("stream closed"), "Waiting for server to close stdin failed")
		klog.Flush()
		got := buf.String()
		if strings.Contains(got, "stdin failed") != c.shown {
			t.Errorf("at %v: logged %q", c.level, got)
		}
		if c.shown && !strings.Contains(got, "level=DEBUG") {
			t.Errorf("not at debug level: %q", got)
		}
	}
}
