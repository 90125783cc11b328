package candidate

import (
	"errors"

	"github.com/strictgrade/strictgrade/firewall"
	"github.com/strictgrade/strictgrade/sandbox"
)

// outputInodes caps the files and directories a data case may leave in
// OutputDir, its root included.
const outputInodes = 4096

// outputQuota is the output directory of a data case: a tmpfs of the
// task's output size (charged to its memory limit) with outputInodes
// inodes, whose content the backend streams out through the firewall. A
// candidate that fills it gets ENOSPC, and nothing of it outlives the
// container.
func outputQuota(l Limits) *sandbox.StreamOut {
	return &sandbox.StreamOut{Dir: OutputDir, Bytes: min(l.OutputBytes, sandbox.MaxStreamOutBytes), Inodes: outputInodes}
}

// outputPolicy is what may leave a data case's output directory: no more
// entries than the tmpfs has inodes and no more bytes than it holds. The
// stream is the candidate's to forge (it may write to the wrapper's
// channel itself), so the firewall, not the tmpfs, is what bounds it.
func outputPolicy(l Limits) firewall.Policy {
	q := outputQuota(l)
	return firewall.Policy{MaxEntries: int(q.Inodes), MaxTotalBytes: q.Bytes, MaxFileBytes: q.Bytes}
}

// rejected says, for each firewall sentinel, what was refused in a data
// case's outputs, in words that never quote what the candidate named.
var rejected = map[error]string{
	firewall.ErrSymlink:    "an output entry is a symbolic link",
	firewall.ErrHardlink:   "an output entry is a file with more than one name (a hard link)",
	firewall.ErrDevice:     "an output entry is a device",
	firewall.ErrFIFO:       "an output entry is a named pipe",
	firewall.ErrSparse:     "an output entry is a sparse file",
	firewall.ErrType:       "an output entry has a type that may not cross, such as a socket",
	firewall.ErrTraversal:  "an output entry's name leaves the output directory",
	firewall.ErrName:       "an output entry's name is not acceptable (invalid UTF-8, not NFC, a control character, a backslash or a colon)",
	firewall.ErrWhiteout:   "an output entry's name is a whiteout",
	firewall.ErrDuplicate:  "two output entries have names equal up to case or Unicode normalisation",
	firewall.ErrConflict:   "an output path is both a file and a directory",
	firewall.ErrLimit:      "the outputs exceed a limit (total or file size, number of entries, name length or depth)",
	firewall.ErrDenied:     "an output entry matches the task's deny list",
	firewall.ErrCompressed: "the output stream is not a plain archive",
	firewall.ErrFormat:     "the output stream is malformed",
	firewall.ErrChecksum:   "the output stream is malformed",
	firewall.ErrTruncated:  "the output stream was cut short",
	firewall.ErrTrailer:    "the output stream was cut short or has trailing data",
	firewall.ErrHeaderOnly: "the output stream is malformed",
	firewall.ErrPAX:        "the output stream is malformed",
}

// outputRejection is the case error for outputs the backend refused
// (sandbox.ErrCollect): the firewall's class, which the proof matrix reads
// as the deciding layer ("firewall: symlink"), and a fixed description.
// Entry names, link targets and the firewall's own reason text are left
// out: the candidate may have derived them from hidden inputs.
func outputRejection(err error) string {
	var rej *firewall.RejectError
	if errors.As(err, &rej) && rej.Err != nil {
		if what, ok := rejected[rej.Err]; ok {
			return "output rejected: " + rej.Err.Error() + ": " + what
		}
		return "output rejected: " + rej.Err.Error()
	}
	return "output rejected: the output directory could not be collected"
}
