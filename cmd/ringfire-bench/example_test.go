package main

import (
	"context"
	"fmt"
	"os"
)

// A bad flag is refused before anything is measured, with an error that
// names it.
func Example() {
	err := run(context.Background(), []string{"--sections", "pingpong,everything"}, os.Stdout, os.Stdout)
	fmt.Println(err)
	// Output: --sections: unknown "everything" (have pingpong, stress, stages, fanout, sendcost, deployed, rings, openloop, lines, archive)
}
