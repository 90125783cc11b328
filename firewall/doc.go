// Package firewall is strictgrade's tar firewall. Every archive that crosses
// a container boundary is parsed once by Filter and re-emitted in a
// canonical form; only the canonical bytes travel on, and their SHA-256
// (Manifest.ArchiveSHA256) is what verdicts bind.
//
// # What is accepted
//
// Regular files and directories, in an uncompressed POSIX ustar, PAX or GNU
// tar stream. Everything else rejects the whole archive (nothing partial is
// ever valid):
//
//   - compressed input, detected by magic number and never decompressed
//     (ErrCompressed); bytes that are not tar (ErrFormat);
//   - symlinks, hard links, devices, FIFOs, sparse files, contiguous files,
//     PAX global headers, GNU long link names, vendor and unknown types
//     (ErrSymlink, ErrHardlink, ErrDevice, ErrFIFO, ErrSparse, ErrType);
//   - absolute names and ".." components (ErrTraversal); empty names,
//     non-canonical names ("a//b", "a/./b", "f/" for a file), control and
//     Unicode format characters, backslashes, colons, invalid UTF-8 and
//     non-NFC names (ErrName); ".wh." whiteout components (ErrWhiteout);
//   - two entries whose paths are equal after case folding and NFC
//     normalisation (ErrDuplicate), an entry below a file or a file and a
//     directory with one path (ErrConflict);
//   - a directory that declares a size (ErrHeaderOnly);
//   - PAX records the policy does not know, a path record for a name the
//     ustar fields hold, any size record, linkpath, hdrcharset (ErrPAX);
//   - bad checksums (ErrChecksum); malformed fields, bytes hidden after a
//     NUL in a name field, non-zero padding, star or V7 headers (ErrFormat);
//     input ending inside a header or data (ErrTruncated); a missing or
//     single-block end marker, data after it, more than 64 KiB of zero
//     padding after it, or a length that is not a multiple of 512
//     (ErrTrailer);
//   - anything over a Policy limit, including the context's deadline
//     (ErrLimit), and denied paths under DenyReject (ErrDenied).
//
// Names are taken as parsed: a PAX path record or GNU long name if present,
// otherwise the ustar prefix and name fields. One leading "./" is removed,
// and one trailing "/" for directories. A "./" or "." directory entry (the
// archive root) is skipped. PAX records for times (mtime, atime, ctime,
// LIBARCHIVE.creationtime), owners (uid, gid, uname, gname) and inode data
// (SCHILY.dev, SCHILY.ino, SCHILY.nlink) are checked for syntax and ignored,
// since the canonical header replaces them; xattr (SCHILY.xattr.*,
// LIBARCHIVE.xattr.*), ACL (SCHILY.acl.*), SCHILY.fflags, comment and
// charset records are dropped and noted in the manifest. Every other record
// rejects the archive.
//
// # The canonical archive
//
// Entries keep their input order; missing parent directories are
// synthesised just before the first entry that needs them. The same input
// therefore always gives the same bytes, and the filter runs in one pass with
// bounded memory. (Two archives with the same files in a different order give
// different digests; Docker's tarballer walks in lexical order.)
//
// Every header is USTAR with uid and gid 0, empty owner names, mode 0755 for
// directories and for files with any execute bit, 0644 for other files,
// modification time 0 (1970-01-01T00:00:00Z), type '5' or '0', directory
// names ending in "/". A path that the ustar name and prefix fields cannot
// hold (longer, or not ASCII) goes in a PAX header with only a "path" record.
// No other PAX record, xattr or GNU extension is ever written. Data is padded
// with zeros to 512 bytes and the archive ends with exactly two zero blocks.
// Filtering a canonical archive reproduces it byte for byte. The canonical
// archive can be larger than its input (synthesised directories, PAX
// headers where the input used GNU long names); a policy applied again to
// canonical archives should leave room for that in MaxInputBytes.
//
// # Memory and time
//
// Nothing is allocated by a declared size: sizes are checked against the
// limits before any data is read, data is streamed through fixed buffers,
// and an extended header is at most 64 KiB. The bookkeeping kept per path
// (for collisions and the manifest) is bounded by MaxEntries × MaxNameLen.
// The time budget is the deadline of the context; a source that stalls past
// it is rejected with ErrLimit.
//
// # Denylist
//
// Policy.Deny takes glob patterns (see Policy) that either reject the archive
// or drop the matching entries, which the manifest lists in Dropped.
//
// # Extraction
//
// Extract materialises an accepted archive into an empty directory through
// os.Root, creating every file exclusively, and removes everything it
// created if the archive is rejected.
package firewall

//go:generate go run ./internal/gencorpus -out testdata/breakout
