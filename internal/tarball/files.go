package tarball

import (
	"archive/tar"
	"bytes"
)

// Files is an archive of regular files held in memory, given as name,
// body pairs in the order they are written (mode 0644, PAX headers); a
// trailing name without a body is left out. It is for archives the
// controller makes itself, which cross the firewall like any other.
func Files(kv ...string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := 0; i+1 < len(kv); i += 2 {
		// Writes to a bytes.Buffer do not fail.
		_ = tw.WriteHeader(&tar.Header{Name: kv[i], Mode: 0o644, Size: int64(len(kv[i+1])), Typeflag: tar.TypeReg, Format: tar.FormatPAX})
		_, _ = tw.Write([]byte(kv[i+1]))
	}
	_ = tw.Close()
	return buf.Bytes()
}
