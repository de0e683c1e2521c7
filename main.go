// Command fieldrelay is an offline-first event delivery and team dispatch node.
package main

import (
	"os"

	"github.com/fieldrelay/fieldrelay/cli"
)

func main() {
	os.Exit(cli.Execute())
}
