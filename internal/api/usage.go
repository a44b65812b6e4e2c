package api

import (
	"context"
	"time"

	"github.com/agentplatform/agentplatform/internal/store"
	"github.com/agentplatform/agentplatform/internal/usage"
)

// UsageRow is one line of a usage report.
type UsageRow struct {
	Key           string   `json:"key" doc:"The UTC date (YYYY-MM-DD), the app, agent or API key id, or the model name; \"\" (\"0\" for a key) gathers the calls without one"`
	Calls         int64    `json:"calls"`
	InputTokens   int64    `json:"input_tokens" doc:"Cached tokens included"`
	OutputTokens  int64    `json:"output_tokens"`
	CostUSD       *float64 `json:"cost_usd" doc:"The priced calls' cost; null when no call of the row has a price (an unknown model)"`
	UnpricedCalls int64    `json:"unpriced_calls" doc:"Calls without a price, not in cost_usd"`
}

func usageRowOut(r *usage.Row) UsageRow {
	out := UsageRow{Key: r.Key, Calls: r.Calls, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, UnpricedCalls: r.UnpricedCalls}
	if r.Priced() {
		usd := usage.MicroToUSD(r.CostMicroUSD)
		out.CostUSD = &usd
	}
	return out
}

type usageInput struct {
	From     string `query:"from" doc:"Start (RFC 3339 time, or a UTC date: its midnight); default the first of this month, UTC"`
	To       string `query:"to" doc:"End, excluded (RFC 3339 time, or a UTC date: that whole day included); default now"`
	AppID    string `query:"app_id" doc:"Only this app's calls"`
	AgentID  string `query:"agent_id" doc:"Only this agent's calls"`
	APIKeyID int64  `query:"api_key_id" doc:"Only the calls this API key made: of the activations, function runs and pipeline runs it started"`
	GroupBy  string `query:"group_by" enum:"day,app,agent,model,key" default:"day" doc:"What a row sums: a UTC day (rows in date order), an app, agent, API key or model (rows by cost, dearest first)"`
	UserID   string `query:"user_id" doc:"Admins, with X-Admin-Reason (audited): another user's usage"`
}

type usageOutput struct {
	Body struct {
		From  time.Time  `json:"from"`
		To    time.Time  `json:"to"`
		Rows  []UsageRow `json:"rows"`
		Total UsageRow   `json:"total" doc:"The sums of every row; key is \"\""`
	}
}

func (a *API) getUsage(ctx context.Context, in *usageInput) (*usageOutput, error) {
	rep, err := a.Usage.Report(ctx, mustCaller(ctx), usage.Query{From: in.From, To: in.To, AppID: in.AppID, AgentID: in.AgentID,
		APIKeyID: in.APIKeyID, GroupBy: in.GroupBy, UserID: in.UserID})
	if err != nil {
		return nil, err
	}
	out := &usageOutput{}
	out.Body.From, out.Body.To = rep.From, rep.To
	out.Body.Rows, out.Body.Total = mapAll(rep.Rows, usageRowOut), usageRowOut(&rep.Total)
	return out, nil
}

// Budget is a spending limit as listed.
type Budget struct {
	ID        string    `json:"id" format:"uuid"`
	Scope     string    `json:"scope" enum:"user,app,key"`
	ScopeID   string    `json:"scope_id" doc:"Your user id, one of your apps' ids, or one of your API keys' ids"`
	Period    string    `json:"period" enum:"day,month" doc:"A UTC day or month: spending counts from its start, so a new period starts from nothing"`
	LimitUSD  float64   `json:"limit_usd"`
	SpentUSD  float64   `json:"spent_usd" doc:"Spent in the current period (priced calls)"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func (a *API) budgetOut(ctx context.Context, b *store.Budget) (Budget, error) {
	spent, err := a.Usage.Spent(ctx, b)
	return Budget{ID: b.ID, Scope: b.Scope, ScopeID: b.ScopeID, Period: b.Period, LimitUSD: usage.MicroToUSD(b.LimitMicroUSD),
		SpentUSD: usage.MicroToUSD(spent), CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt}, err
}

type budgetOutput struct{ Body Budget }

func (a *API) budgetAnswer(ctx context.Context, b *store.Budget, err error) (*budgetOutput, error) {
	if err != nil {
		return nil, err
	}
	out := &budgetOutput{}
	out.Body, err = a.budgetOut(ctx, b)
	return out, err
}

type createBudgetInput struct {
	Body struct {
		Scope    string  `json:"scope" enum:"user,app,key" doc:"What the budget limits: all your usage, one app's, or one API key's (the calls of what it started: activations, function runs, pipeline runs)"`
		ScopeID  string  `json:"scope_id,omitempty" required:"false" doc:"Your user id (default, for scope user), an app's id, or an API key's id"`
		Period   string  `json:"period" enum:"day,month" doc:"UTC day or month"`
		LimitUSD float64 `json:"limit_usd" doc:"Once spent in a period, activations and runs' LLM calls are refused (429 BudgetExceededError) until the next; budget_warning is announced at 80 %"`
	}
}

func (a *API) createBudget(ctx context.Context, in *createBudgetInput) (*budgetOutput, error) {
	b, err := a.Usage.CreateBudget(ctx, mustCaller(ctx), usage.BudgetInput{Scope: in.Body.Scope, ScopeID: in.Body.ScopeID,
		Period: in.Body.Period, LimitUSD: in.Body.LimitUSD})
	return a.budgetAnswer(ctx, b, err)
}

type listBudgetsOutput struct {
	Body struct {
		Budgets []Budget `json:"budgets"`
		Page
	}
}

func (a *API) listBudgets(ctx context.Context, in *struct{ PageParams }) (*listBudgetsOutput, error) {
	list, total, err := a.Usage.Budgets(ctx, mustCaller(ctx), in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	out := &listBudgetsOutput{}
	out.Body.Budgets = make([]Budget, len(list))
	for i := range list {
		if out.Body.Budgets[i], err = a.budgetOut(ctx, &list[i]); err != nil {
			return nil, err
		}
	}
	out.Body.Page = in.page(total)
	return out, nil
}

type budgetIDInput struct {
	BudgetID string `path:"budget_id" doc:"The budget's id"`
}

func (a *API) getBudget(ctx context.Context, in *budgetIDInput) (*budgetOutput, error) {
	b, err := a.Usage.Budget(ctx, mustCaller(ctx), in.BudgetID)
	return a.budgetAnswer(ctx, b, err)
}

type updateBudgetInput struct {
	BudgetID string `path:"budget_id" doc:"The budget's id"`
	Body     struct {
		Period   *string  `json:"period,omitempty" required:"false" enum:"day,month"`
		LimitUSD *float64 `json:"limit_usd,omitempty" required:"false"`
	}
}

func (a *API) updateBudget(ctx context.Context, in *updateBudgetInput) (*budgetOutput, error) {
	b, err := a.Usage.UpdateBudget(ctx, mustCaller(ctx), in.BudgetID, usage.BudgetPatch{Period: in.Body.Period, LimitUSD: in.Body.LimitUSD})
	return a.budgetAnswer(ctx, b, err)
}

func (a *API) deleteBudget(ctx context.Context, in *budgetIDInput) (*struct{}, error) {
	return nil, a.Usage.DeleteBudget(ctx, mustCaller(ctx), in.BudgetID)
}
