package api

import (
	"context"
	"time"

	"github.com/agentplatform/agentplatform/internal/auth"
	"github.com/agentplatform/agentplatform/internal/store"
)

// User is an account as the API shows it (never the password hash).
type User struct {
	ID        string    `json:"id" doc:"User id (UUID)"`
	Email     string    `json:"email" format:"email"`
	FirstName string    `json:"first_name"`
	LastName  string    `json:"last_name"`
	IsActive  bool      `json:"is_active"`
	IsAdmin   bool      `json:"is_admin"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func userOut(u *store.User) User {
	return User{ID: u.ID, Email: u.Email, FirstName: u.FirstName, LastName: u.LastName,
		IsActive: u.IsActive, IsAdmin: u.IsAdmin, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

type userOutput struct{ Body User }

func (a *API) getMe(ctx context.Context, _ *struct{}) (*userOutput, error) {
	u, err := a.Auth.User(ctx, mustCaller(ctx).UserID)
	if err != nil {
		return nil, err
	}
	return &userOutput{userOut(u)}, nil
}

type updateMeInput struct {
	Body struct {
		Email     *string `json:"email,omitempty" required:"false"`
		FirstName *string `json:"first_name,omitempty" required:"false" maxLength:"100"`
		LastName  *string `json:"last_name,omitempty" required:"false" maxLength:"100"`
		// CurrentPassword proves a change of the login: needed when email changes.
		CurrentPassword string `json:"current_password,omitempty" required:"false" doc:"The current password: required when email changes (the other sessions then end)"`
	}
}

func (a *API) updateMe(ctx context.Context, in *updateMeInput) (*userOutput, error) {
	u, err := a.Auth.UpdateProfile(ctx, mustCaller(ctx), auth.ProfilePatch{
		Email: in.Body.Email, FirstName: in.Body.FirstName, LastName: in.Body.LastName, CurrentPassword: in.Body.CurrentPassword})
	if err != nil {
		return nil, err
	}
	return &userOutput{userOut(u)}, nil
}

type changePasswordInput struct {
	Body struct {
		CurrentPassword string `json:"current_password"`
		NewPassword     string `json:"new_password"`
	}
}

func (a *API) changePassword(ctx context.Context, in *changePasswordInput) (*struct{}, error) {
	return nil, a.Auth.ChangePassword(ctx, mustCaller(ctx), in.Body.CurrentPassword, in.Body.NewPassword)
}

type listUsersOutput struct {
	Body struct {
		Users []User `json:"users"`
		Page
	}
}

func (a *API) listUsers(ctx context.Context, in *struct{ PageParams }) (*listUsersOutput, error) {
	users, total, err := a.Auth.Users(ctx, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	out := &listUsersOutput{}
	out.Body.Users, out.Body.Page = mapAll(users, userOut), in.page(total)
	return out, nil
}

type userIDInput struct {
	ID string `path:"id" doc:"User id"`
}

func (a *API) getUser(ctx context.Context, in *userIDInput) (*userOutput, error) {
	u, err := a.Auth.User(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	return &userOutput{userOut(u)}, nil
}

type updateUserInput struct {
	ID   string `path:"id" doc:"User id"`
	Body struct {
		IsActive *bool `json:"is_active,omitempty" required:"false"`
		IsAdmin  *bool `json:"is_admin,omitempty" required:"false"`
	}
}

func (a *API) updateUser(ctx context.Context, in *updateUserInput) (*userOutput, error) {
	u, err := a.Auth.UpdateFlags(ctx, in.ID, auth.FlagsPatch{IsActive: in.Body.IsActive, IsAdmin: in.Body.IsAdmin})
	if err != nil {
		return nil, err
	}
	return &userOutput{userOut(u)}, nil
}

// AuditEntry is one admin access to another user's resource.
type AuditEntry struct {
	ID           int64     `json:"id"`
	ActorID      string    `json:"actor_id" doc:"The admin"`
	Action       string    `json:"action"`
	ResourceType string    `json:"resource_type"`
	ResourceID   string    `json:"resource_id"`
	OwnerID      string    `json:"owner_id" doc:"The user the resource belongs to"`
	Reason       string    `json:"reason" doc:"X-Admin-Reason as sent"`
	CreatedAt    time.Time `json:"created_at"`
}

type auditLogOutput struct {
	Body struct {
		Entries []AuditEntry `json:"entries"`
		Page
	}
}

func (a *API) auditLog(ctx context.Context, in *struct{ PageParams }) (*auditLogOutput, error) {
	entries, total, err := a.Auth.AuditLog(ctx, in.Limit, in.Offset)
	if err != nil {
		return nil, err
	}
	out := &auditLogOutput{}
	out.Body.Entries = mapAll(entries, func(e *store.AuditEntry) AuditEntry { return AuditEntry(*e) })
	out.Body.Page = in.page(total)
	return out, nil
}
