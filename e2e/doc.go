// Package e2e is the end-to-end suite: its tests drive the real fieldrelay binary, built once
// per run (main_test.go), through its command line, its HTTP API, its admin socket, headless
// Chromium and PostgreSQL, as an operator, a tenant's systems and a phone would. It holds no
// product code. `make e2e` runs it; `make unit`, the fast loop, runs every other package;
// `make test` runs both, as CI does.
package e2e
