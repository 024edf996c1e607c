package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ringfire/ringfire/internal/supervisor"
)

// ringfire run --print-example prints a commented configuration that
// ringfire run accepts.
func Example_runPrintExample() {
	var out strings.Builder
	if err := run(context.Background(), []string{"run", "--print-example"}, &out, os.Stderr); err != nil {
		fmt.Println(err)
		return
	}
	c, err := supervisor.Parse("example.toml", []byte(out.String()))
	fmt.Println(strings.SplitN(out.String(), "\n", 2)[0])
	fmt.Println(len(tablesOf(c, supervisor.Serve)), "serve tables,", len(tablesOf(c, supervisor.Mirror)), "mirror tables, err", err)
	// Output:
	// # ringfire run: one process serves and mirrors any number of rings, and
	// 3 serve tables, 2 mirror tables, err <nil>
}

// A mistake in the file names the file, the line and the key.
func Example_runConfigError() {
	dir, _ := os.MkdirTemp("", "rf-example-")
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "ringfire.toml")
	os.WriteFile(file, []byte("[[serve]]\nring = \"/dev/shm/quotes\"\nudp = \"7403\"\n"), 0o644)
	err := run(context.Background(), []string{"run", file}, os.Stdout, os.Stderr)
	fmt.Println(strings.ReplaceAll(err.Error(), dir+"/", ""))
	// Output:
	// run: ringfire.toml:3: key "udp": want an integer, got a string
}
