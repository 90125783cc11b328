// Package seccomp holds the seccomp profile of every strictgrade sandbox:
// Docker's default profile with the system calls refused that let two
// sandboxes that share inodes, a page cache or a host uid tell each other
// something (ADR 0020).
//
// Sandboxes share read-only inodes by design: the sginit volume (ADR 0014),
// a runtime image's shared directory (ADR 0016), the image layers. What the
// kernel keeps about those inodes outside any one sandbox is a channel
// unless the sandbox cannot reach it. The profile refuses, with EPERM:
//
//   - advisory locks: flock, and fcntl's lock, lease and directory-notify
//     commands (F_GETLK, F_SETLK, F_SETLKW and their OFD forms, F_SETLEASE,
//     F_GETLEASE, F_NOTIFY, F_CANCELLK): fcntl is allowed only with the
//     commands listed in FcntlCommands;
//   - watches: inotify_init, inotify_init1, inotify_add_watch,
//     inotify_rm_watch, fanotify_init, fanotify_mark;
//   - page-cache control and residency: fadvise64 (every form),
//     readahead, mincore, cachestat, madvise's MADV_COLD and MADV_PAGEOUT
//     (madvise is allowed only with the advice listed in MadviseAdvice),
//     process_madvise;
//   - reads that say whether data was cached: preadv2 and pwritev2 with
//     RWF_NOWAIT, Linux AIO (io_setup, io_submit, io_getevents,
//     io_pgetevents, io_cancel, io_destroy: an iocb may carry RWF_NOWAIT
//     where no filter can see it) and io_uring.
//
// Everything else is Docker's default profile as the vendored
// github.com/moby/profiles/seccomp module defines it. The profile is a
// JSON file in Docker's format (profile.json, embedded), which the Docker
// engine takes in HostConfig.SecurityOpt ("seccomp=" and the JSON) and
// containerd reads as a Kubernetes Localhost profile. It is generated:
// `go test ./internal/seccomp -run TestProfileFile -update` rewrites it
// from the module's default profile and the rules in rules_test.go's
// build, and the same test fails when the file is stale.
//
// What the profile cannot close is recorded in ADR 0020 and TAXONOMY.md:
// the timing of plain reads against the page cache, fault-around seen in
// /proc/self/pagemap, host-wide counters in /proc, and the per-user
// kernel counters all sandboxes share under one uid.
package seccomp
