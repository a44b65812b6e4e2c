package activation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/executor"
	"github.com/agentplatform/agentplatform/internal/store"
)

// The decisions on a call that waits for approval.
const (
	DecisionApprove = "approve"
	DecisionEdit    = "edit"
	DecisionReject  = "reject"
)

// WaitDecision is a person's decision on one call.
type WaitDecision struct {
	ToolCallID string          `json:"tool_call_id"`
	Type       string          `json:"type" enum:"approve,edit,reject"`
	Arguments  json.RawMessage `json:"arguments,omitempty" doc:"edit: the arguments to run the call with instead (an object)"`
	Message    string          `json:"message,omitempty" doc:"reject: what the model is told instead of the call's result"`
}

// WaitResult is a client tool's result, from the caller.
type WaitResult struct {
	ToolCallID string          `json:"tool_call_id"`
	Output     json.RawMessage `json:"output,omitempty" doc:"The call's result (any JSON)"`
	Error      string          `json:"error,omitempty" doc:"Or: why the call failed (the model is told)"`
}

// WaitAnswer is the answer to a waitpoint: Decisions for an approval, Results
// for client tools.
type WaitAnswer struct {
	Decisions []WaitDecision `json:"decisions,omitempty"`
	Results   []WaitResult   `json:"results,omitempty"`
	// Expired marks the answer the wait's timeout gave in nobody's place
	// (stored with it, never taken from a caller).
	Expired bool `json:"-"`
}

// What a wait's timeout answers in nobody's place.
const (
	// NoDecision is the message of an approval nobody gave in time.
	NoDecision = "No decision in time"
	noResult   = "No result in time for %s"
)

var errWaitpointNotFound = apperr.NotFoundf("Waitpoint not found")

// AnswerWait answers waitpoint wpID of the caller's activation id once:
// the run is queued again and goes on. Another user's activation or
// waitpoint is 404; a second answer, or one to a run that has ended, 409.
func (s *Service) AnswerWait(ctx context.Context, c *auth.Caller, id, wpID string, ans WaitAnswer) (*store.Activation, error) {
	a, err := s.Get(ctx, c, id)
	if err != nil {
		return nil, err
	}
	wp, err := s.Store.WaitpointGet(ctx, wpID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && wp.ActivationID != a.ID) {
		return nil, errWaitpointNotFound
	}
	if err != nil {
		return nil, err
	}
	if wp.AnsweredAt != nil {
		return nil, errAnswered
	}
	if err := checkAnswer(wp, &ans); err != nil {
		return nil, err
	}
	if err := s.answer(ctx, a, wp, &ans, nil); err != nil {
		return nil, err
	}
	return s.Store.ActivationGet(ctx, a.ID)
}

var errAnswered = apperr.New(apperr.Conflict, "This waitpoint has been answered already")

// checkAnswer checks that ans answers every call of wp once, as its kind
// wants.
func checkAnswer(wp *store.Waitpoint, ans *WaitAnswer) error {
	var calls []executor.WaitCall
	if err := json.Unmarshal(wp.ToolCalls, &calls); err != nil {
		return fmt.Errorf("read waitpoint %s: %w", wp.ID, err)
	}
	want := map[string]bool{}
	for _, c := range calls {
		want[c.ToolCallID] = true
	}
	seen := map[string]bool{}
	each := func(field, id string) error {
		if !want[id] {
			return apperr.Invalid(field, fmt.Sprintf("Invalid value for field %s: %q is not a call this waitpoint waits on", field, id))
		}
		if seen[id] {
			return apperr.Invalid(field, fmt.Sprintf("Invalid value for field %s: %q is answered twice", field, id))
		}
		seen[id] = true
		return nil
	}
	switch wp.Kind {
	case store.WaitApproval:
		if len(ans.Results) > 0 {
			return apperr.Invalid("results", "Invalid value for field results: this waitpoint waits for decisions")
		}
		for i, d := range ans.Decisions {
			field := fmt.Sprintf("decisions[%d]", i)
			if err := each(field+".tool_call_id", d.ToolCallID); err != nil {
				return err
			}
			switch d.Type {
			case DecisionApprove, DecisionReject:
			case DecisionEdit:
				if !isObject(d.Arguments) {
					return apperr.Invalid(field+".arguments", "Invalid value for field "+field+".arguments: an edit needs the arguments (an object)")
				}
			default:
				return apperr.Invalid(field+".type", "Invalid value for field "+field+".type: expected approve, edit or reject")
			}
		}
	case store.WaitToolResult:
		if len(ans.Decisions) > 0 {
			return apperr.Invalid("decisions", "Invalid value for field decisions: this waitpoint waits for results")
		}
		for i, r := range ans.Results {
			field := fmt.Sprintf("results[%d]", i)
			if err := each(field+".tool_call_id", r.ToolCallID); err != nil {
				return err
			}
			if (len(r.Output) == 0) == (r.Error == "") {
				return apperr.Invalid(field, "Invalid value for field "+field+": give output or error")
			}
		}
	}
	for _, c := range calls {
		if !seen[c.ToolCallID] {
			field := "decisions"
			if wp.Kind == store.WaitToolResult {
				field = "results"
			}
			return apperr.Invalid(field, fmt.Sprintf("Invalid value for field %s: call %s (%s) is not answered", field, c.ToolCallID, c.Name))
		}
	}
	return nil
}

// answer records ans to wp of a in one transaction with the end of its
// wait step and the run's job; fail, when not nil, ends the run instead
// (a client tool's result that never came).
func (s *Service) answer(ctx context.Context, a *store.Activation, wp *store.Waitpoint, ans *WaitAnswer, fail error) error {
	raw, err := json.Marshal(struct {
		*WaitAnswer
		Expired bool `json:"expired,omitempty"`
	}{ans, ans.Expired})
	if err != nil {
		return err
	}
	now := s.now()
	st := &store.Step{ActivationID: a.ID, Index: wp.StepIndex, Kind: store.StepWait, Status: store.StepCompleted, Output: raw, EndedAt: &now}
	if fail != nil {
		msg := fail.Error()
		st.Status, st.Error = store.StepFailed, &msg
	}
	return s.Store.InTx(ctx, func(tx *store.Store) error {
		if _, ok, err := tx.WaitpointAnswer(ctx, wp.ID, raw, now); err != nil || !ok {
			if err == nil {
				err = errAnswered
			}
			return err
		}
		if _, err := tx.StepEnd(ctx, a.ID, st.Index, st.Status, st.Output, st.Error, nil, now); err != nil {
			return err
		}
		if fail != nil {
			ended, ok, err := tx.ActivationFinish(ctx, a.ID, store.Outcome{Status: store.StatusFailed, Error: fail.Error(), CompletedAt: now})
			if err != nil || !ok {
				return err // ended meanwhile (a cancel): nothing more to do
			}
			if err := s.Events.Record(ctx, tx, s.stepEvent(a, st)); err != nil {
				return err
			}
			return s.endedTx(ctx, tx, ended, nil)
		}
		ok, err := tx.ActivationResume(ctx, a.ID)
		if err != nil {
			return err
		}
		if !ok {
			return apperr.New(apperr.Conflict, "The activation has ended: it waits for nothing")
		}
		if _, err := s.Queue.InsertTx(ctx, tx, Args{ActivationID: a.ID, UserID: a.UserID, Resume: true}, jobOpts(a.Priority)); err != nil {
			return err
		}
		return s.Events.Record(ctx, tx, s.stepEvent(a, st))
	})
}

// expire ends waitpoint wpID if nobody answered it in time: an approval
// becomes a rejection of every call, and the run goes on; a client tool's
// missing result fails the run.
func (s *Service) expire(ctx context.Context, wpID string) error {
	wp, err := s.Store.WaitpointGet(ctx, wpID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // its activation is gone
	}
	if err != nil {
		return err
	}
	if wp.AnsweredAt != nil {
		return nil
	}
	a, err := s.Store.ActivationGet(ctx, wp.ActivationID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var calls []executor.WaitCall
	if err := json.Unmarshal(wp.ToolCalls, &calls); err != nil {
		return err
	}
	ans := &WaitAnswer{Expired: true}
	var fail error
	if wp.Kind == store.WaitApproval {
		for _, c := range calls {
			ans.Decisions = append(ans.Decisions, WaitDecision{ToolCallID: c.ToolCallID, Type: DecisionReject, Message: NoDecision})
		}
	} else if len(calls) > 0 {
		fail = fmt.Errorf(noResult, calls[0].Name)
	}
	err = s.answer(ctx, a, wp, ans, fail)
	if errors.Is(err, errAnswered) || apperr.Is(err, apperr.Conflict) {
		return nil // answered, or ended, meanwhile
	}
	return err
}

// Steps returns a page of the steps of the caller's activation id.
func (s *Service) Steps(ctx context.Context, c *auth.Caller, id string, limit, offset int) ([]store.Step, int, error) {
	a, err := s.Get(ctx, c, id)
	if err != nil {
		return nil, 0, err
	}
	return s.Store.StepsList(ctx, a.ID, limit, offset)
}
