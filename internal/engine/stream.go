package engine

import (
	"fmt"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/internal/streamout"
)

// tmpfsOptions are the mount options of a StreamOut tmpfs: capped in size
// and inodes, owned by the sandbox user, nothing executable or special.
func tmpfsOptions(so StreamOut) string {
	return fmt.Sprintf("rw,noexec,nosuid,nodev,size=%d,nr_inodes=%d,uid=%d,gid=%d,mode=0700",
		so.Bytes, so.Inodes, SandboxUID, SandboxUID)
}

// streamCommand wraps cmd in the stream-out wrapper.
func streamCommand(so StreamOut, cmd []string, pol firewall.Policy) []string {
	return streamout.Command(so, cmd, pol)
}

// streamCap is the most the wrapper writes for a tmpfs with these caps.
func streamCap(so StreamOut, pol firewall.Policy) int64 { return streamout.Cap(so, pol) }

// quotaPolicy narrows pol to the stream-out quota (streamout.QuotaPolicy).
func quotaPolicy(so StreamOut, pol firewall.Policy) firewall.Policy {
	return streamout.QuotaPolicy(so, pol)
}
