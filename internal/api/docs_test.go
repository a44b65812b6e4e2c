package api_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/webtest"
)

// TestDocsPageStaysOnItsOrigin loads /docs in headless Chromium under a
// real-looking hostname (Swagger UI shows its validator badge, a request
// to validator.swagger.io, for any host but localhost) and records every
// request the page makes: all go to the page's own origin.
func TestDocsPageStaysOnItsOrigin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, store.SQLite, nil)
	require.Contains(t, string(e.do("GET", "/docs/init.js", nil).Body), "validatorUrl: null")

	browser := webtest.Chromium(t)
	u, err := url.Parse(e.url)
	require.NoError(t, err)
	origin := "docs.example.test:" + u.Port()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		// Only the docs host resolves: nothing can leave the machine.
		chromedp.Flag("host-resolver-rules", "MAP docs.example.test 127.0.0.1, MAP * ~NOTFOUND"))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()

	var mu sync.Mutex
	var requested []string
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		if req, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requested = append(requested, req.Request.URL)
			mu.Unlock()
		}
	}))
	// The operations are rendered once the document is read; the validator
	// badge, where shown, is an image. (/api/v1/docs is the same page.)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("http://"+origin+"/docs"), chromedp.WaitVisible(chromedp.CSS(".opblock"))))
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`Array.from(document.images).every(i => i.complete)`))
	require.NoError(t, err)

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, requested)
	for _, r := range requested {
		if strings.HasPrefix(r, "data:") || strings.HasPrefix(r, "blob:") {
			continue
		}
		ru, err := url.Parse(r)
		require.NoError(t, err)
		require.Equal(t, origin, ru.Host, "the docs page requested %s", r)
	}
}
