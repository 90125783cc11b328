package proofmatrix

import (
	"encoding/json"
	"testing"
)

// TestLeaksFindsHiddenText is the V10.5 probe's positive control: its
// detector must see hidden text however the statement carries it, or the
// probe's "nothing quoted" would prove nothing.
func TestLeaksFindsHiddenText(t *testing.T) {
	secrets := []string{"tangerine-dusk-7730-qx\ncobalt-lantern-18-vw\n", "short"}
	keys := []string{"greeting_for_visitor"}
	verdict := func(reason string) []byte {
		inner, err := json.Marshal(map[string]any{"cases": []any{map[string]any{"reason": reason}}})
		if err != nil {
			t.Fatal(err)
		}
		// The statement embeds the verdict both as an object and, as some
		// formats do, as a JSON string: both are searched.
		out, err := json.Marshal(map[string]any{"predicate": map[string]any{"verdict": json.RawMessage(inner), "raw": string(inner)}})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		reason string
		found  bool
	}{
		{"a line of a hidden input, escaped", "got \"cobalt-lantern-18-vw\\n\"", true},
		{"eight bytes across a newline", "...7730-qx\ncobalt...", true},
		{"an expected key", "lacks greeting_for_visitor", true},
		{"a digest and a position", "first difference at line 2; output 44 bytes, sha256 e50d96ffdc4b", false},
		{"a secret shorter than eight bytes is not searched", "short", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := leaks(verdict(tt.reason), secrets, keys)
			if (len(got) > 0) != tt.found {
				t.Errorf("leaks = %q, want found=%v", got, tt.found)
			}
		})
	}
}
