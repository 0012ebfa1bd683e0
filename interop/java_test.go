package interop

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/coordhost/coordhost/internal/testtool"
)

// appDir is the Maven project with every Java main class the suite runs.
const appDir = "streams-app"

var mavenBuild struct {
	once sync.Once
	cp   string
	err  string
}

func javaPath(t *testing.T) string {
	t.Helper()
	return testtool.Require(t, "java")
}

// classpath builds streams-app once per test binary (mvn package plus its
// dependency classpath) and returns the classpath of its main classes.
func classpath(t *testing.T) string {
	t.Helper()
	mvn := testtool.Require(t, "mvn")
	mavenBuild.once.Do(func() {
		abs, err := filepath.Abs(appDir)
		if err != nil {
			mavenBuild.err = err.Error()
			return
		}
		cpFile := filepath.Join(abs, "target", "classpath.txt")
		out, err := exec.Command(mvn, "-q", "-B", "-f", filepath.Join(abs, "pom.xml"), "-DskipTests",
			"package", "dependency:build-classpath", "-Dmdep.outputFile="+cpFile).CombinedOutput()
		if err != nil {
			mavenBuild.err = err.Error() + "\n" + string(out)
			return
		}
		deps, err := os.ReadFile(cpFile)
		if err != nil {
			mavenBuild.err = err.Error()
			return
		}
		mavenBuild.cp = filepath.Join(abs, "target", "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(deps))
	})
	if mavenBuild.err != "" {
		t.Fatalf("maven build of %s: %s", appDir, mavenBuild.err)
	}
	return mavenBuild.cp
}
