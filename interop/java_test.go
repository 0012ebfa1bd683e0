package interop

import (
	"testing"

	"github.com/coordhost/coordhost/internal/testtool"
)

// appDir is the Maven project with every Java main class the suite runs
// (Kafka 4.4.0); the client-matrix projects build App.java against older
// Kafka Streams versions.
const (
	appDir    = "streams-app"
	app391Dir = "streams-app-3.9.1"
	app420Dir = "streams-app-4.2.0"
)

func javaPath(t *testing.T) string {
	t.Helper()
	return testtool.Require(t, "java")
}

// classpath builds the Maven project in dir once per test binary and
// returns its classpath.
func classpath(t *testing.T, dir string) string {
	t.Helper()
	return testtool.MavenClasspath(t, dir)
}
