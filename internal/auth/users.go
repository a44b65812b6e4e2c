package auth

import (
	"context"
	"errors"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/agentplatform/agentplatform/internal/apperr"
	"github.com/agentplatform/agentplatform/internal/store"
)

// Password length bounds: the lower one is the contract's; the upper one
// keeps a hash request from being a denial of service.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 256
	maxNameLen     = 100
)

var errUserNotFound = apperr.NotFoundf("User not found")

// Registration is the register form.
type Registration struct {
	Email, Password, ConfirmPassword, FirstName, LastName string
}

// NormalizeEmail trims and lower-cases an email and checks its form.
func NormalizeEmail(email string) (string, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	if email == "" {
		return "", apperr.Invalid("email", "Missing required field: email")
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email || len(email) > 254 {
		return "", apperr.Invalid("email", "Invalid email address")
	}
	return email, nil
}

func checkPassword(field, pw string) error {
	switch n := utf8.RuneCountInString(pw); {
	case pw == "":
		return apperr.Invalid(field, "Missing required field: "+field)
	case n < MinPasswordLen:
		return apperr.Invalid(field, "Password must be at least 8 characters")
	case n > MaxPasswordLen:
		return apperr.Invalid(field, "Password must be at most 256 characters")
	}
	return nil
}

func checkName(field, name string) (string, error) {
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > maxNameLen {
		return "", apperr.Invalid(field, field+" must be at most 100 characters")
	}
	return name, nil
}

// Register creates an account. The first account of an empty instance is an
// admin.
func (s *Service) Register(ctx context.Context, r Registration) (*store.User, error) {
	if !s.opts.RegistrationOpen {
		return nil, apperr.New(apperr.Permission, "Registration is closed")
	}
	return s.CreateUser(ctx, r, false)
}

// CreateUser creates an account whatever the registration setting (the
// `user create` command); admin forces the admin flag.
func (s *Service) CreateUser(ctx context.Context, r Registration, admin bool) (*store.User, error) {
	email, err := NormalizeEmail(r.Email)
	if err != nil {
		return nil, err
	}
	if err := checkPassword("password", r.Password); err != nil {
		return nil, err
	}
	if r.ConfirmPassword != r.Password {
		return nil, apperr.Invalid("confirm_password", "Passwords do not match")
	}
	first, err := checkName("first_name", r.FirstName)
	if err != nil {
		return nil, err
	}
	last, err := checkName("last_name", r.LastName)
	if err != nil {
		return nil, err
	}
	hash, err := s.hasher.hash(ctx, r.Password)
	if err != nil {
		return nil, err
	}
	now := s.now()
	u := &store.User{ID: newID(), Email: email, PasswordHash: hash, FirstName: first, LastName: last,
		IsActive: true, IsAdmin: admin, CreatedAt: now, UpdatedAt: now}
	err = s.store.UserCreate(ctx, u, true)
	if errors.Is(err, store.ErrConflict) {
		return nil, apperr.New(apperr.Conflict, "Email already registered")
	}
	return u, err
}

// NewSession is a signed-in session and its token, shown once.
type NewSession struct {
	Token     string
	ExpiresAt time.Time
	User      *store.User
}

// Login checks credentials and opens a session.
func (s *Service) Login(ctx context.Context, email, password string) (*NewSession, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	if email == "" {
		return nil, apperr.Invalid("email", "Missing required field: email")
	}
	if password == "" {
		return nil, apperr.Invalid("password", "Missing required field: password")
	}
	if len(password) > 4*MaxPasswordLen {
		return nil, ErrBadCredentials
	}
	u, err := s.store.UserGetByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) {
		// An unknown email costs a hash too, and waits for a slot like a
		// known one: neither the time nor the answer tells them apart.
		if _, err := s.hasher.verify(ctx, s.dummyHash, password); err != nil {
			return nil, err
		}
		return nil, ErrBadCredentials
	}
	if err != nil {
		return nil, err
	}
	ok, err := s.hasher.verify(ctx, u.PasswordHash, password)
	if err != nil {
		return nil, err
	}
	// A disabled account answers like a wrong password: a distinct answer
	// for the right password would tell a guesser when they had it.
	if !ok || !u.IsActive {
		return nil, ErrBadCredentials
	}
	token, hash := NewToken(PrefixSession)
	now := s.now()
	sess := &store.Session{ID: newID(), UserID: u.ID, TokenHash: hash, CreatedAt: now, ExpiresAt: now.Add(s.opts.SessionTTL)}
	if err := s.store.SessionCreate(ctx, sess); err != nil {
		return nil, err
	}
	return &NewSession{Token: token, ExpiresAt: sess.ExpiresAt, User: u}, nil
}

// Logout ends the session of token; an unknown token is not an error.
func (s *Service) Logout(ctx context.Context, token string) error {
	sess, _, err := s.store.SessionGetByTokenHash(ctx, HashToken(token), s.now())
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.store.SessionDelete(ctx, sess.ID); err != nil {
		return err
	}
	s.CredentialsChanged(ctx, sess.UserID)
	return nil
}

// User returns the account of id.
func (s *Service) User(ctx context.Context, id string) (*store.User, error) {
	if uuid.Validate(id) != nil {
		return nil, errUserNotFound
	}
	u, err := s.store.UserGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errUserNotFound
	}
	return u, err
}

// ProfilePatch is a partial update of one's own profile. CurrentPassword
// is needed only when Email changes.
type ProfilePatch struct {
	Email, FirstName, LastName *string
	CurrentPassword            string
}

// UpdateProfile changes the caller's own profile. The email is the login,
// so changing it asks for the current password, as a password change does
// (a stolen key or an unattended session must not lock the owner out), and
// ends the user's other sessions.
func (s *Service) UpdateProfile(ctx context.Context, c *Caller, p ProfilePatch) (*store.User, error) {
	u, err := s.User(ctx, c.UserID)
	if err != nil {
		return nil, err
	}
	emailChanged := false
	if p.Email != nil {
		email, err := NormalizeEmail(*p.Email)
		if err != nil {
			return nil, err
		}
		emailChanged, u.Email = email != u.Email, email
	}
	if p.FirstName != nil {
		if u.FirstName, err = checkName("first_name", *p.FirstName); err != nil {
			return nil, err
		}
	}
	if p.LastName != nil {
		if u.LastName, err = checkName("last_name", *p.LastName); err != nil {
			return nil, err
		}
	}
	// The cached callers carry the user's email: forgotten after the
	// commit, so that none is cached again from the old row.
	defer s.keys.forget()
	if !emailChanged {
		return u, s.saveUser(ctx, s.store, u)
	}
	if err := s.checkCurrentPassword(ctx, u, p.CurrentPassword); err != nil {
		return nil, err
	}
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		if err := s.saveUser(ctx, tx, u); err != nil {
			return err
		}
		return tx.SessionDeleteByUser(ctx, u.ID, c.SessionID)
	})
	if err != nil {
		return nil, err
	}
	s.CredentialsChanged(ctx, u.ID)
	return u, nil
}

func (s *Service) saveUser(ctx context.Context, st *store.Store, u *store.User) error {
	u.UpdatedAt = s.now()
	err := st.UserUpdate(ctx, u)
	switch {
	case errors.Is(err, store.ErrConflict):
		return apperr.New(apperr.Conflict, "Email already registered")
	case errors.Is(err, store.ErrNotFound):
		return errUserNotFound
	}
	return err
}

// checkCurrentPassword is the proof of a change that could lock the owner
// out (a new password, a new email): 400 naming current_password when it
// is missing or wrong.
func (s *Service) checkCurrentPassword(ctx context.Context, u *store.User, current string) error {
	if current == "" {
		return apperr.Invalid("current_password", "Missing required field: current_password")
	}
	ok, err := s.hasher.verify(ctx, u.PasswordHash, current)
	if err != nil {
		return err
	}
	if !ok {
		return apperr.Invalid("current_password", "Current password is incorrect")
	}
	return nil
}

// ChangePassword replaces the caller's password after checking the current
// one, and ends every other session of the user.
func (s *Service) ChangePassword(ctx context.Context, c *Caller, current, next string) error {
	if current == "" {
		return apperr.Invalid("current_password", "Missing required field: current_password")
	}
	if err := checkPassword("new_password", next); err != nil {
		return err
	}
	u, err := s.User(ctx, c.UserID)
	if err != nil {
		return err
	}
	if err := s.checkCurrentPassword(ctx, u, current); err != nil {
		return err
	}
	hash, err := s.hasher.hash(ctx, next)
	if err != nil {
		return err
	}
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.UserSetPassword(ctx, u.ID, hash, s.now()); err != nil {
			return err
		}
		return tx.SessionDeleteByUser(ctx, u.ID, c.SessionID)
	})
	if err == nil {
		s.CredentialsChanged(ctx, u.ID)
	}
	return err
}

// Users returns a page of every account (admin).
func (s *Service) Users(ctx context.Context, limit, offset int) ([]store.User, int, error) {
	return s.store.UserList(ctx, limit, offset)
}

// FlagsPatch is an admin's change of an account's flags.
type FlagsPatch struct {
	IsActive, IsAdmin *bool
}

// UpdateFlags sets is_active / is_admin of another account (admin). The
// last active admin cannot be demoted or disabled: the instance would have
// no one left to administer it.
func (s *Service) UpdateFlags(ctx context.Context, id string, p FlagsPatch) (*store.User, error) {
	var out *store.User
	if uuid.Validate(id) != nil {
		return nil, errUserNotFound
	}
	defer s.keys.forget() // admin or active changed: cached callers are stale
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		u, err := tx.UserGet(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return errUserNotFound
		}
		if err != nil {
			return err
		}
		wasAdmin := u.IsAdmin && u.IsActive
		if p.IsActive != nil {
			u.IsActive = *p.IsActive
		}
		if p.IsAdmin != nil {
			u.IsAdmin = *p.IsAdmin
		}
		if wasAdmin && !(u.IsAdmin && u.IsActive) {
			n, err := tx.UserCountActiveAdmins(ctx)
			if err != nil {
				return err
			}
			if n <= 1 {
				return apperr.New(apperr.Conflict, "Cannot remove the last active admin")
			}
		}
		u.UpdatedAt = s.now()
		if err := tx.UserUpdate(ctx, u); err != nil {
			return err
		}
		if !u.IsActive {
			// A disabled account is signed out everywhere at once.
			if err := tx.SessionDeleteByUser(ctx, u.ID, ""); err != nil {
				return err
			}
		}
		out = u
		return nil
	})
	if err == nil {
		s.CredentialsChanged(ctx, id)
	}
	return out, err
}
