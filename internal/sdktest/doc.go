// Package sdktest holds the Go SDK's tests against the real API (apptest). The SDK is its
// own module (sdk/go.mod; package sdk imports the standard library only) and cannot import the service, so the tests
// that need a running API live here, in the main module, which requires the SDK through a
// replace directive.
package sdktest
