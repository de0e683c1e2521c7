// Command fieldrelay is an offline-first event delivery and team dispatch node.
package main

import (
	"os"

	// Named so that the end-to-end test's cli helper does not shadow the package.
	frcli "github.com/fieldrelay/fieldrelay/cli"
)

func main() {
	os.Exit(frcli.Execute())
}
