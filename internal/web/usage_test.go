package web_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/testdb"
	"github.com/agentplatform/agentplatform/internal/webtest"
)

// TestBrowserUsagePage: the usage page, in a real browser, on both
// databases: an empty month says so; with calls recorded this month the
// chart has a bar per day with usage, the tables name the app and agents
// (a deleted app by its id), and a budget shows what it has spent; at a
// phone's width nothing sticks out.
func TestBrowserUsagePage(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, d store.Dialect) {
		env := webtest.Start(t, d, nil)
		const email = "usage@example.com"
		session := signup(t, env, email)
		appID, _ := importApp(t, env, session)
		ctx := context.Background()
		st := env.Server.Store
		user, err := st.UserGetByEmail(ctx, email)
		require.NoError(t, err)
		agents, err := st.AgentListByApp(ctx, appID)
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(agents), 2)

		b := webtest.NewBrowser(t, env.URL, webtest.Options{})
		logIn(b, email)
		b.Click(`nav a[href="/usage"]`)
		b.WaitPath("/usage")
		b.WaitText("[data-empty=usage]", "No usage")
		b.Shot("usage-empty")

		// Two days of this month (one if today is the first), a deleted
		// app's call among them.
		now := time.Now().UTC()
		first := time.Date(now.Year(), now.Month(), 1, 0, 1, 0, 0, time.UTC)
		today := now.Add(-time.Second)
		if today.Before(first) {
			first = today
		}
		cost := func(v int64) *int64 { return &v }
		gone := uuid.NewString()
		recs := []*store.UsageRecord{
			{AppID: appID, AgentID: agents[0].ID, Model: "gpt-test", InputTokens: 1000, OutputTokens: 200, CostMicroUSD: cost(1_500_000), CreatedAt: first},
			{AppID: appID, AgentID: agents[1].ID, Model: "claude-test", InputTokens: 400, OutputTokens: 100, CreatedAt: today},
			{AppID: gone, AgentID: uuid.NewString(), Model: "gpt-test", InputTokens: 10, OutputTokens: 5, CostMicroUSD: cost(250_000), CreatedAt: today},
		}
		for _, r := range recs {
			r.ID, r.UserID, r.Provider = uuid.NewString(), user.ID, "openai"
		}
		require.NoError(t, st.UsageInsert(ctx, recs...))
		r := call(t, env, "POST", "/api/v1/budgets", "application/json",
			`{"scope": "app", "scope_id": "`+appID+`", "period": "month", "limit_usd": 5}`, "Authorization", "Bearer "+session)
		require.Equal(t, http.StatusCreated, r.StatusCode, r.Body)

		b.Open("/usage")
		b.WaitText("[data-totals]", "3")
		totals := b.Text("[data-totals]")
		require.Contains(t, totals, "1410")
		require.Contains(t, totals, "$1.75")
		require.Contains(t, totals, "1 unpriced")
		wantDays := map[string]bool{first.Format(time.DateOnly): true, today.Format(time.DateOnly): true}
		require.Equal(t, len(wantDays), webtest.Eval[int](b, `document.querySelectorAll("svg[data-chart] rect.bar").length`))
		for day := range wantDays {
			require.True(t, webtest.Eval[bool](b, `!!document.querySelector("svg[data-chart] rect.bar[data-day='`+day+`']")`), day)
		}
		require.False(t, webtest.Eval[bool](b, `!!document.querySelector("[data-chart-note]")`), "priced: the chart is USD")

		apps := b.Text("[data-list=apps] tbody")
		require.Contains(t, apps, "Support Desk")
		require.Contains(t, apps, gone, "a deleted app by its id")
		require.Equal(t, 2, webtest.Eval[int](b, `document.querySelectorAll("[data-list=apps] tbody tr").length`))
		agentRows := b.Text("[data-list=agents] tbody")
		require.Contains(t, agentRows, agents[0].Name)
		require.Contains(t, agentRows, agents[1].Name)
		require.Equal(t, 3, webtest.Eval[int](b, `document.querySelectorAll("[data-list=agents] tbody tr").length`))
		models := b.Text("[data-list=models] tbody")
		require.Contains(t, models, "gpt-test")
		require.Contains(t, models, "claude-test")
		require.Contains(t, models, "no price")
		budget := b.Text("[data-list=budgets] tbody tr")
		require.Contains(t, budget, "Support Desk")
		require.Contains(t, budget, "month")
		require.Contains(t, budget, "$5.00")
		require.Equal(t, "$1.50", b.Text("[data-list=budgets] [data-spent]"))
		require.Equal(t, "30", strconv.Itoa(int(webtest.Eval[float64](b, `document.querySelector("[data-list=budgets] meter").value`))))
		b.Shot("usage")

		// The month before is empty; its link leads back.
		b.Click(`a[rel=prev]`)
		b.WaitText("[data-empty=usage]", "No usage")
		b.Click(`a[rel=next]`)
		b.WaitText("[data-totals]", "3")

		// A mistyped date is a 400 naming the field.
		r = call(t, env, "GET", "/usage?from=nope", "", "", cookie(session)...)
		require.Equal(t, http.StatusBadRequest, r.StatusCode)
		require.Contains(t, r.Body, "from")

		phone := webtest.NewBrowser(t, env.URL, webtest.Options{Width: 390, Height: 844})
		logIn(phone, email)
		phone.Open("/usage")
		phone.WaitText("[data-totals]", "3")
		phone.NoHorizontalOverflow()
		phone.Shot("phone-usage")
	})
}
