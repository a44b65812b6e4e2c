// Package examples holds the example apps of the README, in the binary
// too: the web UI offers an empty account the support desk (examples/
// support-desk.json is the file embedded, not a copy of it).
package examples

import _ "embed"

// SupportDesk is examples/support-desk.json: a ticket model, an LLM agent
// and a custom one, a function, a pipeline and an OAuth authenticator.
//
//go:embed support-desk.json
var SupportDesk []byte
