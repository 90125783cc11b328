package firewall

import "io/fs"

// Manifest describes an accepted archive. All lists are in the order of the
// canonical archive. It is JSON-serialisable with stable snake_case names;
// lists are never null.
type Manifest struct {
	// Files are the regular files of the canonical archive.
	Files []File `json:"files"`
	// Dirs are the directories of the canonical archive, including the
	// synthesised parents.
	Dirs []string `json:"dirs"`
	// Entries is the number of entries in the canonical archive
	// (len(Files)+len(Dirs)).
	Entries int `json:"entries"`
	// TotalBytes is the sum of the sizes of Files.
	TotalBytes int64 `json:"total_bytes"`
	// ArchiveSHA256 is the lowercase hex SHA-256 of the canonical archive:
	// the digest a verdict binds.
	ArchiveSHA256 string `json:"archive_sha256"`
	// ArchiveBytes is the length of the canonical archive.
	ArchiveBytes int64 `json:"archive_bytes"`
	// InputEntries counts the entries read from the input, not counting
	// extended headers.
	InputEntries int `json:"input_entries"`
	// InputBytes is the length of the input, trailer padding included.
	InputBytes int64 `json:"input_bytes"`
	// Dropped lists the entries left out because the denylist matched them
	// under DenyDrop.
	Dropped []Drop `json:"dropped"`
	// Normalised lists changes beyond the normalisation applied to every
	// entry (owner, permissions, time): synthesised directories, cleared
	// setuid/setgid/sticky bits, dropped PAX records (xattrs, ACLs, ...), a
	// skipped root entry.
	Normalised []Note `json:"normalised"`
}

// File is a regular file of the canonical archive.
type File struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Mode is 0755 for files with an execute bit in the input, else 0644.
	Mode fs.FileMode `json:"mode"`
	// SHA256 is the lowercase hex SHA-256 of the contents.
	SHA256 string `json:"sha256"`
}

// Drop is an entry left out of the canonical archive.
type Drop struct {
	Path   string `json:"path"`
	Dir    bool   `json:"dir,omitempty"`
	Reason string `json:"reason"`
}

// Note records a normalisation applied to one path.
type Note struct {
	Path   string `json:"path"`
	Change string `json:"change"`
}
