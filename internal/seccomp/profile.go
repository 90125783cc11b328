package seccomp

import (
	"bytes"
	_ "embed"
	"encoding/json"
)

// Name is the profile's file name, versioned: a node that installs it for
// Kubernetes (a Localhost profile) keeps each version under its own name.
const Name = "strictgrade-sandbox-v1.json"

//go:embed profile.json
var profile []byte

// Profile returns the profile's JSON (a copy).
func Profile() []byte { return append([]byte(nil), profile...) }

// Option is the Docker security option that applies the profile: the
// JSON without its indentation, as a daemon's inspect shows it back.
func Option() string {
	var b bytes.Buffer
	if err := json.Compact(&b, profile); err != nil {
		panic("seccomp: profile.json is not JSON: " + err.Error()) // a test guards the embedded file
	}
	return "seccomp=" + b.String()
}

// FcntlCommands are the fcntl commands the profile allows; any other
// command is refused with EPERM. The lock commands (F_GETLK 5, F_SETLK 6,
// F_SETLKW 7, their 32-bit forms 12 to 14, F_OFD_GETLK 36, F_OFD_SETLK 37,
// F_OFD_SETLKW 38), F_SETLEASE 1024, F_GETLEASE 1025, F_NOTIFY 1026 and
// F_CANCELLK 1029 are not among them.
var FcntlCommands = []uint64{
	0,    // F_DUPFD
	1,    // F_GETFD
	2,    // F_SETFD
	3,    // F_GETFL
	4,    // F_SETFL
	8,    // F_SETOWN
	9,    // F_GETOWN
	10,   // F_SETSIG
	11,   // F_GETSIG
	15,   // F_SETOWN_EX
	16,   // F_GETOWN_EX
	17,   // F_GETOWNER_UIDS
	1027, // F_DUPFD_QUERY
	1028, // F_CREATED_QUERY
	1030, // F_DUPFD_CLOEXEC
	1031, // F_SETPIPE_SZ
	1032, // F_GETPIPE_SZ
	1033, // F_ADD_SEALS
	1034, // F_GET_SEALS
	1035, // F_GET_RW_HINT
	1036, // F_SET_RW_HINT
	1037, // F_GET_FILE_RW_HINT
	1038, // F_SET_FILE_RW_HINT
}

// MadviseAdvice are the madvise advice values the profile allows; any
// other is refused with EPERM. MADV_COLD (20) and MADV_PAGEOUT (21), which
// would push shared file pages out of the page cache, are not among them.
var MadviseAdvice = []uint64{
	0,   // MADV_NORMAL
	1,   // MADV_RANDOM
	2,   // MADV_SEQUENTIAL
	3,   // MADV_WILLNEED
	4,   // MADV_DONTNEED
	8,   // MADV_FREE
	9,   // MADV_REMOVE
	10,  // MADV_DONTFORK
	11,  // MADV_DOFORK
	12,  // MADV_MERGEABLE
	13,  // MADV_UNMERGEABLE
	14,  // MADV_HUGEPAGE
	15,  // MADV_NOHUGEPAGE
	16,  // MADV_DONTDUMP
	17,  // MADV_DODUMP
	18,  // MADV_WIPEONFORK
	19,  // MADV_KEEPONFORK
	22,  // MADV_POPULATE_READ
	23,  // MADV_POPULATE_WRITE
	24,  // MADV_DONTNEED_LOCKED
	25,  // MADV_COLLAPSE
	102, // MADV_GUARD_INSTALL
	103, // MADV_GUARD_REMOVE
}

// Refused are the system calls the profile refuses whatever their
// arguments (Docker's default allows them).
var Refused = []string{
	"arm_fadvise64_64", "cachestat", "fadvise64", "fadvise64_64",
	"fanotify_init", "fanotify_mark", "flock",
	"inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch",
	"io_cancel", "io_destroy", "io_getevents", "io_pgetevents", "io_pgetevents_time64",
	"io_setup", "io_submit", "io_uring_enter", "io_uring_register", "io_uring_setup",
	"mincore", "process_madvise", "readahead",
}

// rwfNoWait is RWF_NOWAIT, preadv2's and pwritev2's flag that fails a read
// the page cache cannot serve at once.
const rwfNoWait = 0x8
