// Package version holds the platform's release version, set at build time with
// -ldflags "-X github.com/agentplatform/agentplatform/internal/version.Version=…".
package version

// Version is the running platform version; manifests' minPlatformVersion is
// compared against it.
var Version = "0.1.0"

// APIVersion is the path version every endpoint is served under.
const APIVersion = "v1"
