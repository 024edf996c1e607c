package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/ringfire/ringfire/replica/auth"
)

const keygenHelp = `Keygen writes a fresh 32-byte secret, as hex, to a new file of mode 0600:
the key that serve --key and mirror --key share. Copy it to every host of
the replication over a channel you trust; anyone holding it can read and
feed the stream.`

func runKeygen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("keygen", "FILE", keygenHelp, stderr)
	path, err := parsePath(fs, args)
	if err != nil {
		return helpOr(err)
	}
	if err := auth.NewSecretFile(path); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote a new key to %s\n", path)
	return nil
}

// keyFlags are the --key and --encrypt flags of serve and mirror.
type keyFlags struct {
	file    string
	encrypt bool
}

func (k *keyFlags) add(fs *flag.FlagSet, encryptHelp string) {
	fs.StringVar(&k.file, "key", "", "keyed replication with the secret in `FILE` (ringfire keygen): peers without it are refused")
	fs.BoolVar(&k.encrypt, "encrypt", false, encryptHelp)
}

// load reads the key, if any.
func (k *keyFlags) load() (*auth.Key, error) {
	if k.file == "" {
		if k.encrypt {
			return nil, usagef("--encrypt needs --key FILE")
		}
		return nil, nil
	}
	key, err := auth.LoadKey(k.file)
	if err != nil {
		return nil, usagef("--key: %v", err)
	}
	return key, nil
}
