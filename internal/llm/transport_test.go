package llm

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The system providers' transport keeps small buffers, and a request and
// an answer far larger than them still go through whole.
func TestTransportSmallBuffers(t *testing.T) {
	tr := transport(7)
	if tr.ReadBufferSize != connBuffer || tr.WriteBufferSize != connBuffer || tr.MaxIdleConnsPerHost != 7 || tr.MaxIdleConns != 7 {
		t.Fatalf("transport: read %d write %d idle %d/%d", tr.ReadBufferSize, tr.WriteBufferSize, tr.MaxIdleConns, tr.MaxIdleConnsPerHost)
	}
	big := strings.Repeat("x", 64*connBuffer)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Long", strings.Repeat("h", 2*connBuffer))
		_, _ = io.WriteString(w, string(b)+big)
	}))
	defer srv.Close()
	c := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	for range 2 { // the second call reuses the connection
		resp, err := c.Post(srv.URL, "text/plain", strings.NewReader(big))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || len(b) != 2*len(big) || len(resp.Header.Get("X-Long")) != 2*connBuffer {
			t.Fatalf("answer: %d bytes (want %d), header %d, err %v", len(b), 2*len(big), len(resp.Header.Get("X-Long")), err)
		}
	}
}
