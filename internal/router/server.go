package router

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/agentplatform/agentplatform/internal/limits"
)

// ServerOptions are what the HTTP service needs besides the handler.
type ServerOptions struct {
	// Listen returns the listener to serve on (bound before, or at Start).
	Listen func() (net.Listener, error)
	// TLSCert and TLSKey serve HTTPS when set.
	TLSCert, TLSKey string
	Log             *slog.Logger
	// Base is the requests' base context; its end is ignored: requests
	// outlive SIGTERM until Stop has drained them.
	Base context.Context
	// OnShutdown runs when Stop begins: requests Shutdown would wait for
	// (SSE streams) end there, their clients reconnect.
	OnShutdown func()
	// Failed receives the error if serving stops by itself.
	Failed chan<- error
}

// Server is the HTTP service (a lifecycle.Service): an http.Server with the
// front door's timeouts and head limit, serving h.
type Server struct {
	h   http.Handler
	o   ServerOptions
	srv *http.Server
}

// NewServer is the HTTP service serving h.
func NewServer(h http.Handler, o ServerOptions) *Server { return &Server{h: h, o: o} }

// Start begins serving; it returns once the listener is bound.
func (s *Server) Start(context.Context) error {
	ln, err := s.o.Listen()
	if err != nil {
		return err
	}
	base := context.WithoutCancel(s.o.Base)
	s.srv = &http.Server{
		Handler:           s.h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.o.Log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },

		// Above limits.HeaderBytes, so that an oversized head reaches
		// the front door and gets its 431 rather than net/http's text.
		MaxHeaderBytes: limits.ServerHeaderBytes,
	}
	if s.o.OnShutdown != nil {
		s.srv.RegisterOnShutdown(s.o.OnShutdown)
	}
	go func() {
		var err error
		if s.o.TLSCert != "" {
			err = s.srv.ServeTLS(ln, s.o.TLSCert, s.o.TLSKey)
		} else {
			err = s.srv.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) && s.o.Failed != nil {
			s.o.Failed <- err
		}
	}()
	return nil
}

// Stop stops accepting connections and lets in-flight requests finish
// until ctx ends.
func (s *Server) Stop(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Shutdown(ctx)
}
