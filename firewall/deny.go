package firewall

import (
	"path"
	"strings"
)

// pattern is one compiled denylist glob. See Policy for the syntax.
type pattern struct {
	src     string   // as written in the policy
	segs    []string // folded segments; "**" matches zero or more components
	dirOnly bool
}

const maxPatternLen = 4096

// compilePattern parses a deny pattern; why explains a malformed one.
func compilePattern(src string, f *folder) (pat pattern, why string) {
	bad := func(why string) (pattern, string) {
		return pattern{}, why
	}
	if len(src) > maxPatternLen {
		return bad("too long")
	}
	s := src
	pat = pattern{src: src}
	if strings.HasSuffix(s, "/") {
		pat.dirOnly = true
		s = s[:len(s)-1]
	}
	anchored := strings.Contains(s, "/")
	s = strings.TrimPrefix(s, "/")
	if s == "" {
		return bad("empty")
	}
	// A pattern and a path are folded the same way, so that matching is
	// insensitive to case and normalisation. Folding leaves the glob syntax
	// alone: all of it is ASCII punctuation.
	s = f.key(s)
	segs := strings.Split(s, "/")
	for _, seg := range segs {
		switch seg {
		case "":
			return bad("empty segment")
		case ".", "..":
			return bad("\".\" or \"..\" segment")
		}
		if _, err := path.Match(seg, ""); err != nil {
			return bad(err.Error())
		}
	}
	if !anchored {
		segs = append([]string{"**"}, segs...)
	}
	// Runs of "**" are equivalent to one.
	out := segs[:0]
	for _, seg := range segs {
		if seg == "**" && len(out) > 0 && out[len(out)-1] == "**" {
			continue
		}
		out = append(out, seg)
	}
	pat.segs = out
	return pat, ""
}

// match reports whether the pattern matches the path whose folded key is
// split into comps. Ancestors are not considered here: the caller propagates
// a denied directory to everything below it. scratch is reused between
// calls.
func (p *pattern) match(comps []string, isDir bool, scratch *[]bool) bool {
	if p.dirOnly && !isDir {
		return false
	}
	return matchSegs(p.segs, comps, scratch)
}

// matchSegs matches segments against components. ok[j] records whether
// segs[i:] matches comps[j:], computed from the last segment backwards, so
// the cost is len(segs)*len(comps) whatever the number of "**".
func matchSegs(segs, comps []string, scratch *[]bool) bool {
	n := len(comps)
	if cap(*scratch) < 2*(n+1) {
		*scratch = make([]bool, 2*(n+1))
	}
	buf := (*scratch)[:2*(n+1)]
	clear(buf)
	ok, next := buf[:n+1], buf[n+1:]
	ok[n] = true // an empty pattern matches only the empty tail
	for i := len(segs) - 1; i >= 0; i-- {
		seg := segs[i]
		if seg == "**" {
			// ** matches comps[j:k] for any k >= j.
			acc := false
			for j := n; j >= 0; j-- {
				acc = acc || ok[j]
				next[j] = acc
			}
		} else {
			next[n] = false
			for j := n - 1; j >= 0; j-- {
				m, _ := path.Match(seg, comps[j])
				next[j] = m && ok[j+1]
			}
		}
		ok, next = next, ok
	}
	return ok[0]
}
