package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/strictgrade/strictgrade/attest"
)

func init() {
	register(command{name: "keygen", summary: "make a verdict signing key pair", do: runKeygen})
}

// runKeygen writes DIR/strictgrade.key (0600) and DIR/strictgrade.pub
// (0644). The private key is unencrypted PKCS#8 unless --password-env names
// an environment variable holding a password, in which case it is written
// in cosign's encrypted format. Existing files are never overwritten.
func runKeygen(ctx context.Context, args []string, stdio IO) error {
	fs := flagSet(stdio.Stderr, "keygen", "--out DIR [flags]",
		"Writes DIR/strictgrade.key (0600) and DIR/strictgrade.pub (0644); never overwrites them. To sign with an\nencrypted key, grade and task check read its password from $STRICTGRADE_KEY_PASSWORD, else $COSIGN_PASSWORD.")
	out := fs.String("out", "", "directory for strictgrade.key and strictgrade.pub (required; created 0700 if missing)")
	kind := fs.String("type", string(attest.KeyECDSAP256), "key type: ecdsa-p256 or ed25519")
	pwEnv := fs.String("password-env", "", "encrypt the private key (cosign format) with the password in this environment variable")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("takes no arguments")
	}
	if *out == "" {
		return usagef("--out DIR is required")
	}
	kt, err := attest.ParseKeyType(*kind)
	if err != nil {
		return badInput(err)
	}
	var password []byte
	if *pwEnv != "" {
		pw, ok := os.LookupEnv(*pwEnv)
		if !ok {
			return usagef("environment variable %s is not set", *pwEnv)
		}
		password = []byte(pw)
	}
	privPath, pubPath, err := attest.WriteKeyPair(*out, kt, password)
	if err != nil {
		return err
	}
	pemPub, err := os.ReadFile(pubPath)
	if err != nil {
		return err
	}
	pub, err := attest.LoadPublicKey(pemPub)
	if err != nil {
		return err
	}
	hint, err := attest.KeyHint(pub)
	if err != nil {
		return err
	}
	encrypted := "unencrypted"
	if password != nil {
		encrypted = "encrypted"
	}
	fmt.Fprintf(stdio.Stdout, "private\t%s\n", privPath)
	fmt.Fprintf(stdio.Stdout, "public\t%s\n", pubPath)
	fmt.Fprintf(stdio.Stdout, "hint\t%s\n", hint)
	stdio.Log.Info("key pair written", "type", string(kt), "private_key", encrypted,
		"note", "keep the private key on the host; never copy it into a container, volume or image")
	return nil
}
