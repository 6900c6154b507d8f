package wire

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// serverProcessEnv makes the test binary serve echo over HTTP/2 until its stdin closes, for the
// benchmarks whose figure is the client's own CPU: with Go's server in the same process, every
// write the client saves also saves the server a wakeup, and the process's CPU counts both.
const serverProcessEnv = "WIRE_SERVER_PROCESS"

func serveProcess() {
	ts := httptest.NewUnstartedServer(http.HandlerFunc(echo))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	fmt.Printf("%s %s\n", ts.URL, base64.StdEncoding.EncodeToString(ts.Certificate().Raw))
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// serverProcess starts the test binary as a server process and returns a Config that reaches it.
func serverProcess(tb testing.TB) Config {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverProcessEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("the server process said nothing: %v", err)
	}
	url, cert, ok := strings.Cut(strings.TrimSpace(line), " ")
	der, err := base64.StdEncoding.DecodeString(cert)
	if !ok || err != nil {
		tb.Fatalf("the server process said %q", line)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c)
	return Config{Host: url, TLS: &tls.Config{RootCAs: roots}}
}
