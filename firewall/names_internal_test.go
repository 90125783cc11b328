package firewall

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestFoldPerComponent checks the property place relies on: the collision
// key of "x/y" is key(x) + "/" + key(y), for every assigned rune.
func TestFoldPerComponent(t *testing.T) {
	var f folder
	step := 1
	if testing.Short() {
		step = 7
	}
	for r := rune(0x80); r <= unicode.MaxRune; r += rune(step) {
		if !utf8.ValidRune(r) || !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.S, unicode.P) {
			continue
		}
		c := string(r)
		for _, s := range []string{c + "/" + c, "A" + c + "/" + c + "b", c + c + "/x"} {
			if !norm.NFC.IsNormalString(s) {
				continue
			}
			a, b, _ := strings.Cut(s, "/")
			if got, want := f.key(s), f.key(a)+"/"+f.key(b); got != want {
				t.Fatalf("key(%+q) = %+q, want %+q", s, got, want)
			}
		}
	}
}

func TestCanonicalName(t *testing.T) {
	l, err := Policy{}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		raw   string
		dir   bool
		want  string
		root  bool
		class error
	}{
		{raw: "a", want: "a"},
		{raw: "./a", want: "a"},
		{raw: "a/", dir: true, want: "a"},
		{raw: "./a/b/", dir: true, want: "a/b"},
		{raw: "./", dir: true, root: true},
		{raw: ".", dir: true, root: true},
		{raw: "././a", class: ErrName},
		{raw: ".//a", class: ErrTraversal}, // "/a" once "./" is removed
		{raw: "a//", dir: true, class: ErrName},
		{raw: "a/", class: ErrName},
		{raw: ".", class: ErrName},
		{raw: "", class: ErrName},
		{raw: "/a", class: ErrTraversal},
		{raw: "./../a", class: ErrTraversal},
		{raw: "a/..", class: ErrTraversal},
		{raw: "..", dir: true, class: ErrTraversal},
		{raw: "a//../b", class: ErrTraversal},
		{raw: "a:b", class: ErrName},
		{raw: "a\\b", class: ErrName},
		{raw: "a\x7fb", class: ErrName},
		{raw: "a\u200bb", class: ErrName}, // zero-width space (Cf)
		{raw: "a\u2028b", class: ErrName}, // line separator
		{raw: "\u00e9", want: "\u00e9"},
		{raw: "e\u0301", class: ErrName},
		{raw: "a/.wh.b", class: ErrWhiteout},
		{raw: ".wh..wh..opq", class: ErrWhiteout},
		{raw: "a.wh.b", want: "a.wh.b"},
		{raw: "...", want: "..."},
		{raw: strings.Repeat("x", 256), class: ErrLimit},
		{raw: strings.Repeat("x", 255), want: strings.Repeat("x", 255)},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			p, root, ne := canonicalName(tc.raw, tc.dir, l)
			if tc.class != nil {
				if ne == nil || ne.err != tc.class {
					t.Fatalf("canonicalName(%q) = %q, %v, %+v; want %v", tc.raw, p, root, ne, tc.class)
				}
				return
			}
			if ne != nil || p != tc.want || root != tc.root {
				t.Fatalf("canonicalName(%q) = %q, %v, %+v; want %q, %v", tc.raw, p, root, ne, tc.want, tc.root)
			}
		})
	}
}
