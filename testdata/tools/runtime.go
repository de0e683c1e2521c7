//go:build tools

// Package tools pins the tools of the tests in a module of its own, so that none of
// their dependencies enters the main module's go.mod or the binary
// (docs/decisions/0137-generated-client.md): oapi-codegen, run by `go tool oapi-codegen`
// here, and the runtime package its generated client imports, which the test compiles.
package tools

import _ "github.com/oapi-codegen/runtime"
