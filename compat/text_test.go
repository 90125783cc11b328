package compat

import (
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"plain reason", 100, "plain reason"},
		{"line\nbreak\x00 \u202e", 100, `line\nbreak\x00 \u202e`},
		{`say "hi"`, 100, `say \"hi\"`},
		{strings.Repeat("a", 50), 10, strings.Repeat("a", 9) + "…"},
	}
	for _, tt := range tests {
		got := text(tt.in, tt.max)
		if got != tt.want {
			t.Errorf("text(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
		if n := len([]rune(got)); n > tt.max {
			t.Errorf("text(%q, %d) has %d characters", tt.in, tt.max, n)
		}
	}
}
