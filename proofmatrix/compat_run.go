package proofmatrix

import (
	"strings"
	"sync"

	"github.com/strictgrade/strictgrade/schema"
)

// compatLayer names the layer behind a compat-tier FAIL.
func compatLayer(v *schema.Verdict) string {
	if v.Compat != nil && len(v.Compat.DroppedHunks) > 0 {
		rule := v.Compat.DroppedHunks[0].Rule
		rule, _, _ = strings.Cut(rule, ":")
		return "diff-gate: " + rule
	}
	return "oracle: " + v.ReasonCode
}

var attachOnce sync.Once

// attachCompat gives each probe its compat form.
func attachCompat() {
	attachOnce.Do(func() {
		for _, p := range registry {
			if c, ok := compatForms[p.ID]; ok {
				c.Task = "textkit"
				p.Compat = c
			}
		}
	})
}
